"""Sweeps: validating a sweep's jobs and starting a sweep run.

A sweep run (SweepExecution) queues every run of configs x jobs x repetitions in one
transaction, ordered per machine: all runs of one config next to each other, the configs of one
engine next to each other, so a machine never switches away from a config and back within a
sweep (Ollama, say, keeps one model loaded instead of swapping). A managed engine is still started and
stopped by each run (runs.worker.engine_session), not kept up between runs. It is finished when its last run
ends (succeeded, failed, cancelled or lost): SweepExecution.finish_if_done, in runs.models.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.http import HttpRequest
from django.utils.translation import gettext

from engines.models import EngineConfig
from runs.actions.runs import start_run
from runs.core.registry import JOB_ORDER
from runs.jobs import validate_params
from runs.models import Schedule, Sweep, SweepExecution
from teams import audit
from teams.models import Team

__all__ = ["clean_jobs", "record_sweep", "start_sweep", "sweep_teams"]

log = logging.getLogger(__name__)



def clean_jobs(jobs: Any) -> list[dict[str, Any]]:
    """The sweep's jobs with their parameters validated and defaults filled in, in the job registry's order.

    Raises ValueError naming the job and the field, e.g. "speed: reps must be between 1 and 50".
    """
    if not isinstance(jobs, list) or not jobs:
        raise ValueError(gettext("jobs: choose at least one job"))
    clean: dict[str, dict[str, Any]] = {}
    for entry in jobs:
        job, params = _job_entry(entry)
        if job in clean:
            twice = gettext("%(job)s: listed twice (a sweep runs each job once per config and repetition)")
            raise ValueError(twice % {"job": job})
        try:
            clean[job] = validate_params(job, params)
        except ValueError as exc:
            raise ValueError(f"{job}: {exc}") from None
    return [{"job": job, "params": clean[job]} for job in sorted(clean, key=JOB_ORDER.__getitem__)]


def _job_entry(entry: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(entry, dict) or not isinstance(entry.get("job"), str):
        message = gettext('jobs: each entry must be {"job": NAME, "params": {...}}, not %(entry)s')
        raise ValueError(message % {"entry": repr(entry)})
    job, params = entry["job"], entry.get("params") or {}
    if job not in JOB_ORDER:
        message = gettext("%(job)s: not a job (jobs: %(jobs)s)")
        raise ValueError(message % {"job": job, "jobs": ", ".join(JOB_ORDER)})
    if not isinstance(params, dict):
        message = gettext("%(job)s: params must be a JSON object, not %(params)s")
        raise ValueError(message % {"job": job, "params": json.dumps(params)[:60]})
    return job, params


def sweep_teams(sweep: Sweep) -> list[Team]:
    """The teams whose machines the sweep's configs run on (none for a sweep without configs)."""
    if sweep.pk is None:
        return []
    return list(Team.objects.filter(machines__engines__configs__sweeps=sweep).distinct())


def record_sweep(actor: Any, action: str, obj: Any, sweep: Sweep, *,
                 request: HttpRequest | None = None, **detail: Any) -> None:
    """An audit event about ``obj`` (the sweep, its schedule or sweep run) for each team the sweep
    spans, so each of those teams' admins sees it; one without a team when it spans none."""
    teams: list[Team | None] = [*sweep_teams(sweep)] or [None]
    for team in teams:
        audit.record(actor, action, obj, team, request=request, **detail)


def start_sweep(
    sweep: Sweep, trigger: str = SweepExecution.Trigger.MANUAL, schedule: Schedule | None = None,
    user: User | AnonymousUser | None = None, request: HttpRequest | None = None,
) -> SweepExecution:
    """Queue every run of the sweep in one transaction; they are handed over, in order, on commit.

    All or nothing: a bad job or a config that can't run one (ValueError, naming both) queues nothing.
    """
    jobs = clean_jobs(sweep.jobs)
    configs = sorted(sweep.configs.select_related("engine__machine"), key=EngineConfig.queue_key)
    if not configs:
        raise ValueError(gettext("configs: choose at least one config"))
    user = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        execution = SweepExecution.objects.create(
            sweep=sweep, trigger=trigger, schedule=schedule, created_by=user
        )
        record_sweep(user, "started", execution, sweep, request=request, trigger=trigger)
        for config in configs:
            for entry in jobs:
                _queue_cell(execution, config, entry, sweep.repetitions, user, request)
    return execution


def _queue_cell(
    execution: SweepExecution, config: EngineConfig, entry: dict[str, Any], reps: int,
    user: User | None, request: HttpRequest | None,
) -> None:
    for repetition in range(1, reps + 1):
        try:
            start_run(config, entry["job"], entry["params"], user,
                      execution=execution, repetition=repetition, request=request)
        except ValueError as exc:
            raise ValueError(f"{config.name}, {entry['job']}: {exc}") from None
