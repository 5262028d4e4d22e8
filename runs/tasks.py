"""Celery tasks: thin wrappers that claim a run by pk and hand it to runs.worker.execution.

Nothing imports this module: runs.worker.dispatch sends EXECUTE_RUN by name; Celery finds it.
"""
from __future__ import annotations

from celery import shared_task

from runs.actions import schedules
from runs.worker import connection, execution

BUSY_RETRY_S = 2


@shared_task(bind=True, acks_late=True, max_retries=None)
def execute_run(self, run_id: int) -> str:  # type: ignore[no-untyped-def]
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


@shared_task(acks_late=False)
def check_connection(check_id: int) -> None:
    """Run a connection check on this machine's queue (runs.worker.connection)."""
    connection.run_check(check_id)
