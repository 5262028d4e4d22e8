"""Step 4: the measurement core: jobs' inner loops and statistics, plain async Python, no Django."""
