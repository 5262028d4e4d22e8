"""Celery tasks: thin wrappers that claim a run by pk and hand it to runs.execution."""
from __future__ import annotations

from celery import shared_task

from runs import execution

BUSY_RETRY_S = 2


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_job(self, run_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run one queued run on this machine's queue; safe to deliver twice."""
    outcome = execution.claim(run_id)
    if outcome == execution.BUSY:
        # Another job holds the box (e.g. a worker started by hand): wait our turn.
        raise self.retry(countdown=BUSY_RETRY_S)
    if outcome == execution.CLAIMED:
        execution.execute(run_id)
    return outcome
