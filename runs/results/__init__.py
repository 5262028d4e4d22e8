"""Step 6: what finished runs show: scorecards, comparisons, sweep grids, charts, Prometheus, reports."""
