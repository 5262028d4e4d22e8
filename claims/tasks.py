"""Celery's side of claims: beat sends the claim schedules' tick (sparkdash.settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=False, name="claims.tasks.tick_claim_schedules")
def tick_claim_schedules() -> int:
    """Fire the due claim schedules and refresh running checks; how many checks started."""
    from claims.schedules import tick

    return len(tick())
