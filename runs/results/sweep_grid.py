"""The grid of a sweep run from the database: rows = the configs it queued, columns = its jobs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engines.models import EngineConfig
from runs.core import registry
from runs.core.scoring.grid import Grid, GridRun, build_grid
from runs.models import Run, SweepExecution


def _config_row(config: EngineConfig) -> dict[str, Any]:
    engine = config.engine
    return {"id": config.pk, "name": config.name, "url": config.get_absolute_url(),
            "engine": engine.name, "machine": engine.machine.name, "simulator": engine.simulator}


def execution_runs(execution: SweepExecution) -> list[Run]:
    """The sweep run's runs with their configs, engines and machines, in one query."""
    runs = Run.objects.filter(execution_id=execution.pk).select_related("config__engine__machine")
    return list(runs.only(
        "pk", "job", "status", "summary", "warnings", "repetition", "config__name", "config__engine__name",
        "config__engine__simulator", "config__engine__machine__name",
    ).order_by("pk"))


def execution_grid(execution: SweepExecution, runs: Iterable[Run] | None = None) -> Grid:
    """Rows = the configs the sweep run queued (in queue order), columns = its jobs."""
    runs = execution_runs(execution) if runs is None else list(runs)
    configs = sorted({run.config_id: run.config for run in runs}.values(), key=EngineConfig.queue_key)
    jobs = sorted({run.job for run in runs}, key=registry.JOB_ORDER.__getitem__)
    return build_grid(
        [_config_row(c) for c in configs], [(job, registry.get(job).label) for job in jobs],
        (GridRun(r.pk, r.config_id, r.job, r.status, r.summary, r.warnings) for r in runs),
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
