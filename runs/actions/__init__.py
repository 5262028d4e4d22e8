"""Step 2 of a run's path: what a user or a schedule can do (start and cancel runs, sweeps, alerts)."""
