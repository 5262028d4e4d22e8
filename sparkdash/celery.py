"""Celery application, configured from Django settings (CELERY_* names)."""
import os
from typing import Any

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sparkdash.settings")

app = Celery("sparkdash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def start_reaper(**kwargs: Any) -> None:
    """Every worker fails lost runs periodically, so a killed run never shows running forever."""
    from django.conf import settings

    from runs.worker.reaper import start_reaper

    start_reaper(settings.SPARKDASH_REAP_INTERVAL_S)
