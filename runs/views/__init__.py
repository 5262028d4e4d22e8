"""Step 1 of a run's path: pages and the JSON API, one module per page family; they call runs.actions."""
