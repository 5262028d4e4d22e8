"""Starting and cancelling runs: the actions views, commands and schedules share."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.http import HttpRequest
from django.utils.translation import gettext

from engines import kinds, revisions
from engines.models import ConfigRevision, EngineConfig, Machine
from runs.core import registry
from runs.core.jobs.replay.kind import JOB as REPLAY
from runs.jobs import validate_params
from runs.models import Run, SweepExecution
from runs.worker import dispatch
from runs.worker.engine_session import LOOKAHEAD_NEEDS_RELAUNCH
from teams import audit


def start_replay(
    config: EngineConfig, params: dict[str, Any], user: User | AnonymousUser | None, *,
    request: HttpRequest | None = None,
) -> Run:
    """A run of the replay kind with recorded requests (the traffic page's Replay button)."""
    return start_run(config, REPLAY.name, params, user, request=request)


def start_run(
    config: EngineConfig,
    job: str,
    params: dict[str, Any] | None = None,
    user: User | AnonymousUser | None = None,
    *,
    execution: SweepExecution | None = None,
    repetition: int | None = None,
    request: HttpRequest | None = None,
    revision: ConfigRevision | None = None,
) -> Run:
    """Create a queued run and hand it to the config's machine once the row is committed.

    Raises ValueError (naming the field) for an unknown job or out-of-range parameters, and
    for a machine whose relay is serving real traffic (Machine.relay_refusal).
    Inside an outer transaction (a sweep) the run is handed over when that one commits.
    The audit log says who started it (``user``; None: the system, e.g. a schedule) and from
    which address (``request``). The run runs with ``revision``'s settings (run again), else with
    the config's current ones (recorded as a revision if they are new).
    """
    clean = validate_params(job, params or {})
    if config.archived:
        raise ValueError(gettext("%(name)s is archived: restore it to run it") % {"name": config.name})
    if revision is None:
        revision = revisions.record(config, user)
    elif revision.config_id != config.pk:
        raise ValueError(gettext("that revision belongs to another config"))
    config = revision.applied(config)
    engine = config.engine
    spec = registry.get(job)
    if not spec.startable:
        refused = gettext("%(job)s runs are read from a result file, not started")
        raise ValueError(refused % {"job": spec.label})
    by_alias = kinds.get(engine.kind).lookahead_by == "alias"
    if spec.engine == "per-lookahead" and not engine.managed and not by_alias:
        raise ValueError(LOOKAHEAD_NEEDS_RELAUNCH)
    if spec.needs_drafting and not config.lookahead:
        needs = gettext("%(job)s needs a config that drafts: set its lookahead above 0")
        raise ValueError(needs % {"job": spec.label})
    # Read now, not from the config's cached machine: the relay's heartbeat moves on its own.
    busy = Machine.objects.only("name", "relay_heartbeat").get(pk=engine.machine_id).relay_refusal()
    if busy:
        raise ValueError(busy)
    with transaction.atomic():
        run = Run.objects.create(
            config=revision.config,
            revision=revision,
            machine=config.engine.machine,
            job=job,
            params=clean,
            created_by=user if user is not None and user.is_authenticated else None,
            execution=execution,
            repetition=repetition,
        )
        audit.record(user, "started", run, engine.machine.team, request=request, job=job,
                     sweep_run=execution.pk if execution else None)
        dispatch.enqueue_on_commit(run)
    return run


def cancel_run(
    run: Run, user: User | AnonymousUser | None = None, request: HttpRequest | None = None
) -> bool:
    """Mark a queued or running run cancelled (now finished); a running job stops at its next flush.

    A run that was cancelled (not one already finished) goes in the audit log as ``user``'s.
    """
    cancelled = Run.objects.cancel(run.pk)
    if cancelled:
        audit.record(user, "cancelled", run, run.machine.team, request=request)
    return cancelled
