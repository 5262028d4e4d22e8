"""Celery tasks: thin wrappers that claim a run by pk and hand it to runs.execution."""
from __future__ import annotations

from celery import Task, shared_task

from runs import execution, schedules

BUSY_RETRY_S = 2


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_job(self: Task[[int], str], run_id: int) -> str:
    """Run one queued run on this machine's queue; safe to deliver twice."""
    outcome = execution.claim(run_id)
    if outcome == execution.BUSY:
        # Another job holds the box (e.g. a worker started by hand): wait our turn.
        raise self.retry(countdown=BUSY_RETRY_S)
    if outcome == execution.CLAIMED:
        execution.execute(run_id)
    return outcome


@shared_task(acks_late=False)
def fire_schedule(schedule_id: int) -> int | None:
    """Start a schedule's sweep (sent by celery beat); a disabled or deleted schedule does nothing.

    Acknowledged on receipt: a lost firing shows as missed, where a redelivered one would
    start the sweep twice.
    """
    started = schedules.fire(schedule_id)
    return started.pk if started else None
