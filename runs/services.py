"""Starting and cancelling runs: the actions views, commands and schedules share."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction

from engines.models import EngineConfig
from runs import dispatch, sweeps
from runs.engine_session import LOOKAHEAD_NEEDS_RELAUNCH
from runs.jobs import validate_params
from runs.models import Run, SweepExecution


def start_run(
    config: EngineConfig,
    job: str,
    params: dict[str, Any] | None = None,
    user: User | AnonymousUser | None = None,
    *,
    execution: SweepExecution | None = None,
    repetition: int | None = None,
) -> Run:
    """Create a queued run and hand it to the config's machine once the row is committed.

    Raises ValueError (naming the field) for an unknown job or out-of-range parameters.
    Inside an outer transaction (a sweep) the run is handed over when that one commits.
    """
    clean = validate_params(job, params or {})
    engine = config.engine
    if job == Run.Job.LOOKAHEAD and not engine.managed and engine.kind != engine.Kind.OLLAMA:
        raise ValueError(LOOKAHEAD_NEEDS_RELAUNCH)
    with transaction.atomic():
        run = Run.objects.create(
            config=config,
            machine=config.engine.machine,
            job=job,
            params=clean,
            created_by=user if user is not None and user.is_authenticated else None,
            execution=execution,
            repetition=repetition,
        )
        dispatch.enqueue_on_commit(run)
    return run


def cancel_run(run: Run) -> bool:
    """Mark a queued or running run cancelled; the job loop stops at its next flush."""
    active = (Run.Status.QUEUED, Run.Status.RUNNING)
    updated = Run.objects.filter(pk=run.pk, status__in=active).update(status=Run.Status.CANCELLED)
    if updated:  # a cancelled run has ended: its sweep run may be complete now
        sweeps.maybe_finish_execution(run.pk)
    return updated == 1
