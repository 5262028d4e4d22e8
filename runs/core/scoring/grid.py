"""The grid of a sweep run, without Django: rows = configs, columns = jobs, one figure per cell.

Each job has one headline metric, read as one value per run from its summary; a cell holds the
Spread of those values over the cell's succeeded repetitions (median [min-max] (n), as
docs/metrics.md defines), its progress (runs done, running, failed) and its delta against the
baseline config's cell in the same column, labelled by runs.core.scoring.figures.compare (noise when
the two medians' 95 % intervals overlap; docs/metrics.md, How figures are reported). A cell's
`interval` (its figure's hover) gives that interval and the percentiles over its runs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

from measure.stats import Spread, summarize
from runs.core.hardware import throttle_text, throttled_s
from runs.core.outcomes import FAILED_SHARE_LIMIT, failures_note, over_failed_share
from runs.core.readings import ScoredMetric, Summary
from runs.core.registry import JOBS
from runs.core.scoring.figures import compare, delta_text, figure_text, interval_text

__all__ = ["HEADLINES", "Cell", "Grid", "GridRun", "build_grid", "delta_text", "figure_text"]

TERMINAL = ("succeeded", "failed", "cancelled")
FAILED = ("failed", "cancelled")


# One headline metric per job: the figure a sweep grid shows in the job's column.
HEADLINES: dict[str, ScoredMetric] = {name: spec.headline for name, spec in JOBS.items()}


class GridRun(NamedTuple):
    """What the grid needs of one run."""

    id: int
    config_id: int | str  # the row's id: the config's, or "<config>-r<n>" where its revisions have rows
    job: str
    status: str
    summary: Summary
    warnings: Sequence[Mapping[str, Any]] = ()


class Cell(TypedDict):
    job: str
    total: int
    done: int
    running: int
    failed: int
    run_ids: list[int]
    spread: Spread | None
    text: str
    interval: str
    delta: float | None
    delta_pct: float | None
    verdict: str
    delta_text: str
    delta_pct_text: str
    throttled_s: float | None  # the longest throttle among the cell's runs; None where none throttled
    throttle_text: str  # "throttled 12.3 s", "" where none throttled
    throttle_title: str
    failed_text: str  # "12.5 % of requests failed" where a run's share was over the limit, "" otherwise
    failed_title: str


class CellDelta(TypedDict):
    delta: float | None
    delta_pct: float | None
    verdict: str
    delta_text: str
    delta_pct_text: str


class GridRow(TypedDict):
    config: dict[str, Any]
    baseline: bool
    cells: list[Cell]


class Grid(TypedDict):
    columns: list[dict[str, Any]]
    rows: list[GridRow]
    progress: dict[str, int]


def _cell(job: str, runs: Sequence[GridRun]) -> Cell:
    metric = HEADLINES[job]
    spread = summarize(metric.value(r.summary or {}) for r in runs if r.status == "succeeded")
    return {
        "job": job, "total": len(runs),
        "done": sum(r.status in TERMINAL for r in runs),
        "running": sum(r.status == "running" for r in runs),
        "failed": sum(r.status in FAILED for r in runs),
        "run_ids": [r.id for r in runs], "spread": spread, "text": figure_text(metric, spread),
        "interval": interval_text(spread, metric.unit, metric.digits, metric.scale, counted="runs"),
        "delta": None, "delta_pct": None, "verdict": "baseline", "delta_text": "", "delta_pct_text": "",
        **_throttle(runs), **_failed(runs),
    }


class CellFailed(TypedDict):
    failed_text: str
    failed_title: str


def _failed(runs: Sequence[GridRun]) -> CellFailed:
    """The cell's failed-requests mark: its runs where over FAILED_SHARE_LIMIT of the requests failed."""
    marked = [(r.id, r.summary) for r in runs if over_failed_share(r.summary)]
    if not marked:
        return {"failed_text": "", "failed_title": ""}
    worst = max(s["outcomes"]["failed_share"] for _, s in marked)
    which = "; ".join(f"#{run_id} {failures_note(s)}" for run_id, s in marked)
    return {"failed_text": f"{100 * worst:.0f} % of requests failed",
            "failed_title": f"over {100 * FAILED_SHARE_LIMIT:g} % of the requests failed in run {which}"}


class CellThrottle(TypedDict):
    throttled_s: float | None
    throttle_text: str
    throttle_title: str


def _throttle(runs: Sequence[GridRun]) -> CellThrottle:
    """The cell's throttle mark: the longest throttle among its runs, and which runs throttled."""
    throttled = [(r.id, s) for r in runs if (s := throttled_s(r.summary, r.warnings)) is not None]
    if not throttled:
        return {"throttled_s": None, "throttle_text": "", "throttle_title": ""}
    longest = max(s for _, s in throttled)
    which = ", ".join(f"#{run_id} {s:.1f} s" for run_id, s in throttled)
    title = f"the box was throttled during run {which}: the figure may show heat, not the config"
    return {"throttled_s": longest, "throttle_text": throttle_text(longest), "throttle_title": title}


def _delta(metric: ScoredMetric, base: Spread | None, spread: Spread | None) -> CellDelta:
    result = compare(base, spread, metric.higher_is_better)
    pct = result["delta_pct"]
    return {**result, "delta_text": delta_text(metric, result["delta"]),
            "delta_pct_text": "\u2014" if pct is None else f"{pct:+.1f} %"}


def build_grid(
    configs: Sequence[Mapping[str, Any]], jobs: Sequence[tuple[str, str]], runs: Iterable[GridRun],
    baseline_id: int | str | None,
) -> Grid:
    """The grid: `configs` (dicts with an "id") in row order, `jobs` as (job, label) in column order.

    Deltas are against the baseline's cell in each column; with no baseline among the rows
    every non-baseline cell's verdict is "n/a" and only the figures are shown.
    """
    by_cell: dict[tuple[int | str, str], list[GridRun]] = {}
    for run in runs:
        by_cell.setdefault((run.config_id, run.job), []).append(run)
    has_base = any(c["id"] == baseline_id for c in configs)
    rows: list[GridRow] = []
    for config in configs:
        cells = [_cell(job, by_cell.get((config["id"], job), [])) for job, _ in jobs]
        rows.append({"config": dict(config), "baseline": has_base and config["id"] == baseline_id,
                     "cells": cells})
    base_row = next((row for row in rows if row["baseline"]), None)
    for row in rows:
        if row is base_row:
            continue  # its cells keep the verdict "baseline"
        for i, cell in enumerate(row["cells"]):
            base = base_row["cells"][i]["spread"] if base_row else None
            cell.update(_delta(HEADLINES[cell["job"]], base, cell["spread"]))
    return {"columns": [_column(job, label) for job, label in jobs], "rows": rows,
            "progress": _progress([c for row in rows for c in row["cells"]])}


def _column(job: str, label: str) -> dict[str, Any]:
    metric = HEADLINES[job]
    return {"job": job, "label": label, "metric": metric.label, "unit": metric.unit,
            "higher_is_better": metric.higher_is_better}


def _progress(cells: Sequence[Cell]) -> dict[str, int]:
    totals = {"total": sum(c["total"] for c in cells), "done": sum(c["done"] for c in cells),
              "running": sum(c["running"] for c in cells), "failed": sum(c["failed"] for c in cells)}
    return totals | {"queued": totals["total"] - totals["done"] - totals["running"]}
