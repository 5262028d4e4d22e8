"""Sweeps: validating a sweep's jobs, starting a sweep run, finishing it, and its grid.

A sweep run (SweepExecution) queues every run of configs x jobs x repetitions in one
transaction, ordered per machine: all runs of one config next to each other, the configs of one
engine next to each other, so a machine never switches away from a config and back within a
sweep (Ollama, say, keeps one model loaded instead of swapping). A managed engine is still started and
stopped by each run (runs.engine_session), not kept up between runs. It is finished when its last run
ends (succeeded, failed, cancelled or lost); execution_finished is sent then, once.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.utils import timezone

from engines.models import EngineConfig
from runs import services
from runs.core.sweep_grid import Grid, GridRun, build_grid
from runs.jobs import validate_params
from runs.models import Run, Schedule, Sweep, SweepExecution
from runs.signals import execution_finished

__all__ = [
    "JOB_ORDER", "clean_jobs", "execution_dict", "execution_grid", "maybe_finish_execution",
    "queue_key", "start_sweep",
]

log = logging.getLogger(__name__)

# Columns and queue order follow the jobs' order in Run.Job.
JOB_ORDER = {job: i for i, job in enumerate(Run.Job.values)}


def clean_jobs(jobs: Any) -> list[dict[str, Any]]:
    """The sweep's jobs with their parameters validated and defaults filled in, in Run.Job order.

    Raises ValueError naming the job and the field, e.g. "speed: reps must be between 1 and 50".
    """
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("jobs: choose at least one job")
    clean: dict[str, dict[str, Any]] = {}
    for entry in jobs:
        job, params = _job_entry(entry)
        if job in clean:
            raise ValueError(f"{job}: listed twice (a sweep runs each job once per config and repetition)")
        try:
            clean[job] = validate_params(job, params)
        except ValueError as exc:
            raise ValueError(f"{job}: {exc}") from None
    return [{"job": job, "params": clean[job]} for job in sorted(clean, key=JOB_ORDER.__getitem__)]


def _job_entry(entry: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(entry, dict) or not isinstance(entry.get("job"), str):
        raise ValueError(f'jobs: each entry must be {{"job": NAME, "params": {{...}}}}, not {entry!r}')
    job, params = entry["job"], entry.get("params") or {}
    if job not in JOB_ORDER:
        raise ValueError(f"{job}: not a job (jobs: {', '.join(JOB_ORDER)})")
    if not isinstance(params, dict):
        raise ValueError(f"{job}: params must be a JSON object, not {json.dumps(params)[:60]}")
    return job, params


def queue_key(config: EngineConfig) -> tuple[Any, ...]:
    """Where a config's runs go in its machine's queue: by machine, engine, then config."""
    engine = config.engine
    return (engine.machine.name, engine.machine_id, engine.name, engine.pk, config.name, config.pk)


def start_sweep(
    sweep: Sweep, trigger: str = SweepExecution.Trigger.MANUAL, schedule: Schedule | None = None,
    user: User | AnonymousUser | None = None,
) -> SweepExecution:
    """Queue every run of the sweep in one transaction; they are handed over, in order, on commit.

    All or nothing: a bad job or a config that can't run one (ValueError, naming both) queues nothing.
    """
    jobs = clean_jobs(sweep.jobs)
    configs = sorted(sweep.configs.select_related("engine__machine"), key=queue_key)
    if not configs:
        raise ValueError("configs: choose at least one config")
    user = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        execution = SweepExecution.objects.create(
            sweep=sweep, trigger=trigger, schedule=schedule, created_by=user
        )
        for config in configs:
            for entry in jobs:
                _queue_cell(execution, config, entry, sweep.repetitions, user)
    return execution


def _queue_cell(
    execution: SweepExecution, config: EngineConfig, entry: dict[str, Any], reps: int,
    user: User | None,
) -> None:
    for repetition in range(1, reps + 1):
        try:
            services.start_run(config, entry["job"], entry["params"], user,
                               execution=execution, repetition=repetition)
        except ValueError as exc:
            raise ValueError(f"{config.name}, {entry['job']}: {exc}") from None


def maybe_finish_execution(run_id: int) -> bool:
    """Mark the run's sweep run finished if this was its last active run; True for the one caller that did.

    Call it whenever a run has ended. The conditional update lets only one caller win; the
    signal is sent once that caller's transaction commits.
    """
    execution_id = Run.objects.filter(pk=run_id).values_list("execution_id", flat=True).first()
    if execution_id is None:
        return False
    if Run.objects.filter(execution_id=execution_id).exclude(status__in=Run.TERMINAL).exists():
        return False
    pending = SweepExecution.objects.filter(pk=execution_id, finished__isnull=True)
    if pending.update(finished=timezone.now()) != 1:
        return False  # another run's worker got there first
    transaction.on_commit(lambda: _send_finished(execution_id))
    return True


def _send_finished(execution_id: int) -> None:
    execution = SweepExecution.objects.select_related("sweep").get(pk=execution_id)
    for receiver, result in execution_finished.send_robust(sender=SweepExecution, execution=execution):
        if isinstance(result, Exception):
            log.error("execution_finished receiver %r failed for sweep run %s", receiver, execution_id,
                      exc_info=result)


# --- The grid ---------------------------------------------------------------------------------


def _config_row(config: EngineConfig) -> dict[str, Any]:
    engine = config.engine
    return {"id": config.pk, "name": config.name, "url": config.get_absolute_url(),
            "engine": engine.name, "machine": engine.machine.name, "simulator": engine.simulator}


def execution_runs(execution: SweepExecution) -> list[Run]:
    """The sweep run's runs with their configs, engines and machines, in one query."""
    runs = Run.objects.filter(execution_id=execution.pk).select_related("config__engine__machine")
    return list(runs.only(
        "pk", "job", "status", "summary", "repetition", "config__name", "config__engine__name",
        "config__engine__simulator", "config__engine__machine__name",
    ).order_by("pk"))


def execution_grid(execution: SweepExecution, runs: Iterable[Run] | None = None) -> Grid:
    """Rows = the configs the sweep run queued (in queue order), columns = its jobs."""
    runs = execution_runs(execution) if runs is None else list(runs)
    configs = sorted({run.config_id: run.config for run in runs}.values(), key=queue_key)
    jobs = sorted({run.job for run in runs}, key=JOB_ORDER.__getitem__)
    return build_grid(
        [_config_row(c) for c in configs], [(job, Run.Job(job).label) for job in jobs],
        (GridRun(r.pk, r.config_id, r.job, r.status, r.summary) for r in runs),
        execution.sweep.baseline_id,
    )


def execution_dict(execution: SweepExecution) -> dict[str, Any]:
    """The sweep run and its grid, as GET /api/sweep-runs/<id> answers (the page polls it)."""
    return {
        "id": execution.pk,
        "sweep": {"id": execution.sweep_id, "name": execution.sweep.name},
        "trigger": execution.trigger,
        "created": execution.created.isoformat(),
        "finished": execution.finished.isoformat() if execution.finished else None,
        "error": execution.error,
        "grid": execution_grid(execution),
    }
