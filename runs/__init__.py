"""Runs, samples, the jobs' Django glue, Celery tasks and live updates."""
