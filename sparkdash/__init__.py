"""SparkDash project package: settings and wiring only, no logic."""
from sparkdash.celery import app as celery_app

__all__ = ["celery_app"]
