"""The grid of a sweep run from the database: rows = the configs it queued, columns = its jobs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engines.models import EngineConfig
from runs.core import registry
from runs.core.scoring.grid import Grid, GridRun, build_grid
from runs.models import Run, SweepExecution


def _config_row(config: EngineConfig, revision: int | None, row_id: int | str) -> dict[str, Any]:
    engine = config.engine
    return {"id": row_id, "name": config.name, "url": config.get_absolute_url(), "revision": revision,
            "engine": engine.name, "machine": engine.machine.name, "simulator": engine.simulator}


def execution_runs(execution: SweepExecution) -> list[Run]:
    """The sweep run's runs with their configs, engines, machines and revisions, in one query."""
    runs = Run.objects.filter(execution_id=execution.pk).select_related("config__engine__machine", "revision")
    return list(runs.only(
        "pk", "job", "status", "summary", "warnings", "repetition", "config__name", "config__engine__name",
        "config__engine__simulator", "config__engine__machine__name", "revision__number",
    ).order_by("pk"))


def _revision(run: Run) -> int | None:
    return run.revision.number if run.revision is not None else None


def execution_grid(execution: SweepExecution, runs: Iterable[Run] | None = None) -> Grid:
    """Rows = the configs the sweep run queued (in queue order), columns = its jobs.

    A config edited while its sweep run went has runs of two revisions: each revision gets a row
    of its own (its id "<config>-r<n>"), never one cell of both; the newest is the baseline's row.
    """
    runs = execution_runs(execution) if runs is None else list(runs)
    configs = sorted({run.config_id: run.config for run in runs}.values(), key=EngineConfig.queue_key)
    revisions = {c.pk: sorted({_revision(r) for r in runs if r.config_id == c.pk}, key=lambda n: n or 0)
                 for c in configs}

    def row_id(config_id: int, revision: int | None) -> int | str:
        return config_id if len(revisions[config_id]) == 1 else f"{config_id}-r{revision}"

    rows = [_config_row(c, n, row_id(c.pk, n)) for c in configs for n in reversed(revisions[c.pk])]
    baseline = execution.sweep.baseline_id
    jobs = sorted({run.job for run in runs}, key=registry.JOB_ORDER.__getitem__)
    return build_grid(
        rows, [(job, registry.get(job).label) for job in jobs],
        (GridRun(r.pk, row_id(r.config_id, _revision(r)), r.job, r.status, r.summary, r.warnings)
         for r in runs),
        row_id(baseline, revisions[baseline][-1]) if baseline in revisions else baseline,
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
