"""Any number of configs side by side, without Django: the table, its export rows and chart data.

Each config is a Group of runs (run id, job, summary). Every metric of runs.core.scoring.figures, plus
the speed runs' acceptance at each draft position and the concurrency sweep's figures per level,
is one table row with a cell per config: the figure as median [min-max] (n = runs) and, against
the baseline config, the delta, the delta in % and the verdict (noise where the medians' intervals overlap).
The charts read the same figures.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from measure import catalog
from measure.catalog import ACCEPTANCE_BY_POSITION, ACCEPTANCE_RATE
from measure.stats import Spread, summarize
from measure.words import Words, gettext_noop
from runs.core.outcomes import failures_note, over_text
from runs.core.readings import Summary, median_of
from runs.core.registry import JOBS, METRICS
from runs.core.scoring.energy import energy_jobs, energy_rows
from runs.core.scoring.figures import ScoreRow, Tally, compare, compare_rows, score_rows, spread_text

__all__ = [
    "EXPORT_COLUMNS",
    "POSITION_KEY",
    "Group",
    "TableCell",
    "TableRow",
    "chart_data",
    "compare_groups",
    "concurrency_curve",
    "export_rows",
    "pareto_front",
    "quality_scatter",
]

CONCURRENCY = "Concurrency"
SPEED = "Speed"
# A speed run's acceptance at draft position i (1-based): docs/metrics.md, Per-position acceptance.
POSITION_KEY = "acceptance_pos_"
# The job of each benchmark with rows of its own: the kind measured one request at a time (its
# acceptance per draft position), and the kind measured per load level (its figures per level).
ROW_JOBS = {benchmark: next((name for name, spec in JOBS.items() if spec.load == load), "")
            for benchmark, load in ((SPEED, "single"), (CONCURRENCY, "levels"))}
DASH = "\u2014"
# (summary key of a level, label, unit, higher is better, digits)
# The figures of each load level, as the metric catalogue declares them.
LEVEL_FIGURES = ("total_tps", "finish_s")
SCALES = {(m.benchmark, m.key): m.scale for m in METRICS}
COUNTS = {(m.benchmark, m.key) for m in METRICS if m.count}
# Quality axes of the speed-vs-quality scatter, in order of preference: (benchmark, key, scale, label).
QUALITY = [
    ("MMLU-Pro", "accuracy", 100.0, "MMLU-Pro accuracy, %"),
    ("HumanEval+", "pass_at_1_plus", 100.0, "HumanEval+ pass@1 (plus tests), %"),
    ("MBPP+", "pass_at_1_plus", 100.0, "MBPP+ pass@1 (plus tests), %"),
    ("Agent table", "f1", 100.0, "agent table F1, %"),
]


@dataclass(frozen=True)
class Group:
    """One config's runs: (run id, job, summary) each, all of which count."""

    config_id: int
    name: str
    runs: Sequence[tuple[int, str, Summary]]


class TableCell(TypedDict):
    config_id: int
    baseline: bool
    text: str
    spread: Spread | None
    tally: Tally | None
    runs: int
    delta: float | None
    delta_pct: float | None
    verdict: str
    delta_text: str
    delta_pct_text: str
    title: str  # why there is no figure (an energy row's energy_note), "" otherwise
    over: str  # "over 9 of 12 requests" of the row's runs, "" where they count no outcomes
    failed: bool  # some of those requests failed


class Versus(TypedDict):
    delta: float | None
    delta_pct: float | None
    verdict: str
    delta_text: str
    delta_pct_text: str


class TableRow(TypedDict):
    benchmark: str
    key: str
    label: str
    unit: str
    higher_is_better: bool
    out_of: str
    cells: list[TableCell]


def compare_groups(groups: Sequence[Group], baseline_id: int) -> list[TableRow]:
    """One row per metric that any config has runs of; each config's cell against the baseline's."""
    levels = sorted({int(c) for g in groups for c in _levels(g.runs)})
    positions = max((len(p) for g in groups for _, p in _positions(g.runs)), default=0)
    jobs = energy_jobs(run for g in groups for run in g.runs)
    scored = {
        g.config_id: _after_speed(score_rows(g.runs), _position_rows(g.runs, positions))
        + _level_rows(g.runs, levels) + energy_rows(g.runs, jobs)
        for g in groups
    }
    base = scored[baseline_id]
    summaries = {run_id: summary for g in groups for run_id, _, summary in g.runs}
    table: list[TableRow] = []
    for i, first in enumerate(base):
        rows = [scored[g.config_id][i] for g in groups]
        if not any(row["runs"] for row in rows):
            continue
        cells = [
            _cell(g.config_id, base[i], row, g.config_id == baseline_id,
                  _over([summaries[run_id] for run_id in row["run_ids"] if run_id in summaries]))
            for g, row in zip(groups, rows, strict=True)
        ]
        out_of = list(dict.fromkeys(row["out_of"] for row in rows if row["out_of"]))
        table.append({
            "benchmark": first["benchmark"], "key": first["key"], "label": first["label"],
            "unit": first["unit"], "higher_is_better": first["higher_is_better"],
            "out_of": " vs ".join(out_of), "cells": cells,
        })
    return table


class Over(TypedDict):
    over: str
    failed: bool


def _over(summaries: Sequence[Summary]) -> Over:
    """How many requests the cell's figure is over (runs/core/outcomes.py), and whether any failed."""
    return {"over": over_text(summaries), "failed": any(failures_note(s) for s in summaries)}


def _cell(config_id: int, base: ScoreRow, row: ScoreRow, is_baseline: bool, over: Over) -> TableCell:
    versus: Versus = {
        "delta": None, "delta_pct": None, "verdict": "baseline", "delta_text": "", "delta_pct_text": "",
    }
    if not is_baseline:
        versus = _versus(base, row)
    return {
        "config_id": config_id, "baseline": is_baseline, "text": row["text"], "spread": row["spread"],
        "tally": row["tally"], "runs": row["runs"], "title": row.get("note") or row.get("interval", ""),
        **versus,
        "over": over["over"], "failed": over["failed"],
    }


def _versus(base: ScoreRow, row: ScoreRow) -> Versus:
    if (row["benchmark"], row["key"]) not in SCALES:  # a level's or a position's row: no metric of its own
        return _row_versus(base, row)
    paired = compare_rows([base], [row])
    if not paired:
        return {"delta": None, "delta_pct": None, "verdict": "n/a", "delta_text": DASH,
                "delta_pct_text": DASH}
    pair = paired[0]
    return {"delta": pair["delta"], "delta_pct": pair["delta_pct"], "verdict": pair["verdict"],
            "delta_text": pair["delta_text"], "delta_pct_text": pair["delta_pct_text"]}


def _row_versus(base: ScoreRow, row: ScoreRow) -> Versus:
    result = compare(base["spread"], row["spread"], row["higher_is_better"])
    delta, pct = result["delta"], result["delta_pct"]
    if delta is None:
        delta_text = DASH
    elif row["unit"] == "%":
        delta_text = f"{delta * 100:+.1f} pp"  # a difference of two shares is in percentage points
    else:
        delta_text = f"{delta:+.{1 if row['unit'] == 'tok/s' else 2}f} {row['unit']}"
    pct_text = DASH if pct is None else f"{pct:+.1f} %"
    return {**result, "delta_text": delta_text, "delta_pct_text": pct_text}


def _row(benchmark: str, key: str, label: str, unit: str, higher: bool, spread: Spread | None,
         run_ids: list[int], text: str) -> ScoreRow:
    """A table row of a figure that has no ScoredMetric of its own (per level, per position)."""
    return {
        "benchmark": benchmark, "job": ROW_JOBS[benchmark], "key": key,
        "label": label, "unit": unit, "higher_is_better": higher, "count": False, "spread": spread,
        "tally": None, "runs": len(run_ids) if spread else 0, "run_ids": run_ids, "out_of": "",
        "text": text,
    }


# --- Speed runs: acceptance at each draft position, read from summary["acceptance_by_position"] --


def _positions(runs: Iterable[tuple[int, str, Summary]]) -> list[tuple[int, list[float]]]:
    return [(run_id, p) for run_id, job, summary in runs if job == ROW_JOBS[SPEED]
            and (p := summary.get(ACCEPTANCE_BY_POSITION))]


def _position_rows(runs: Sequence[tuple[int, str, Summary]], count: int) -> list[ScoreRow]:
    """Per draft position 1..count: the spread over the speed runs that drafted that far."""
    measured = _positions(runs)
    rows: list[ScoreRow] = []
    for i in range(count):
        at = [(run_id, p[i]) for run_id, p in measured if i < len(p)]
        spread = summarize(value for _, value in at)
        label = Words(gettext_noop("acceptance at draft position %(n)s"), n=i + 1)
        rows.append(_row(SPEED, f"{POSITION_KEY}{i + 1}", label, "%", True,
                         spread, [run_id for run_id, _ in at], spread_text(spread, "%", 1, 100)))
    return rows


def _after_speed(rows: list[ScoreRow], extra: list[ScoreRow]) -> list[ScoreRow]:
    """`extra` placed after the last Speed row (the same place in every config's rows)."""
    at = 1 + max((i for i, row in enumerate(rows) if row["benchmark"] == SPEED), default=len(rows) - 1)
    return rows[:at] + extra + rows[at:]


# --- The concurrency sweep: its figures per level, read from each run's summary["levels"] ------


def _levels(runs: Iterable[tuple[int, str, Summary]]) -> list[str]:
    levels = ROW_JOBS[CONCURRENCY]
    return [c for _, job, summary in runs if job == levels for c in summary.get("levels") or {}]


def _level_value(summary: Summary, c: int, key: str) -> float | None:
    return median_of(key)((summary.get("levels") or {}).get(str(c)) or {})


def _level_rows(runs: Sequence[tuple[int, str, Summary]], levels: list[int]) -> list[ScoreRow]:
    sweeps = [(run_id, summary) for run_id, job, summary in runs if job == ROW_JOBS[CONCURRENCY]]
    rows: list[ScoreRow] = []
    for c in levels:
        for key in LEVEL_FIGURES:
            m = catalog.get(key)
            spread = summarize(_level_value(summary, c, key) for _, summary in sweeps)
            rows.append(_row(CONCURRENCY, f"{key}@{c}", f"{m.label}, {c} at once", m.unit, m.higher_is_better,
                             spread, [run_id for run_id, _ in sweeps], spread_text(spread, m.unit, m.digits)))
    return rows


def concurrency_curve(runs: Iterable[tuple[int, str, Summary]]) -> list[dict[str, float]]:
    """Total tok/s against concurrent requests: per level, the median over the config's sweeps."""
    runs = list(runs)
    points = []
    for c in sorted({int(c) for c in _levels(runs)}):
        spread = summarize(_level_value(s, c, "total_tps") for _, job, s in runs
                           if job == ROW_JOBS[CONCURRENCY])
        if spread:
            points.append({"x": c, "y": spread["median"], "min": spread["min"], "max": spread["max"]})
    return points


# --- Charts ------------------------------------------------------------------------------------


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates (as high or higher on both axes, and
    higher on one): the best trade-offs when both axes are better higher."""
    return [
        i for i, (x, y) in enumerate(points)
        if not any(ox >= x and oy >= y and (ox > x or oy > y) for ox, oy in points)
    ]


def _medians(rows: Sequence[TableRow], benchmark: str, key: str, n: int) -> list[float | None]:
    row = next((r for r in rows if (r["benchmark"], r["key"]) == (benchmark, key)), None)
    if row is None:
        return [None] * n
    return [cell["spread"]["median"] if cell["spread"] else None for cell in row["cells"]]


def _bars(names: Sequence[str], rows: Sequence[TableRow], key: str, scale: float) -> list[dict[str, Any]]:
    row = next((r for r in rows if (r["benchmark"], r["key"]) == ("Speed", key)), None)
    if row is None:
        return []
    return [
        {"config": name, "median": spread["median"] * scale, "min": spread["min"] * scale,
         "max": spread["max"] * scale, "n": spread["n"]}
        for name, cell in zip(names, row["cells"], strict=True)
        if (spread := cell["spread"])
    ]


def quality_scatter(names: Sequence[str], rows: Sequence[TableRow]) -> dict[str, Any] | None:
    """Decode tok/s (x) against the quality metric most configs have (y), Pareto front marked."""
    decode = _medians(rows, "Speed", "decode_tps_client", len(names))
    best: dict[str, Any] | None = None
    for benchmark, key, scale, label in QUALITY:
        quality = _medians(rows, benchmark, key, len(names))
        points = [
            {"config": name, "x": x, "y": y * scale}
            for name, x, y in zip(names, decode, quality, strict=True)
            if x is not None and y is not None
        ]
        if points and (best is None or len(points) > len(best["points"])):
            best = {"benchmark": benchmark, "key": key, "label": label, "points": points}
    if best is None:
        return None
    front = pareto_front([(p["x"], p["y"]) for p in best["points"]])
    for i, point in enumerate(best["points"]):
        point["front"] = i in front
    best["front"] = sorted((best["points"][i] for i in front), key=lambda p: p["x"])
    return best


def chart_data(groups: Sequence[Group], rows: Sequence[TableRow], baseline_id: int) -> dict[str, Any]:
    """What static/js/compare.js draws: bars with their ranges, concurrency curves, the scatter."""
    names = [g.name for g in groups]
    curves = [{"config": g.name, "points": concurrency_curve(g.runs)} for g in groups]
    return {
        "configs": names,
        "baseline": next(g.name for g in groups if g.config_id == baseline_id),
        "decode": _bars(names, rows, "decode_tps_client", 1.0),
        "acceptance": _bars(names, rows, ACCEPTANCE_RATE, 100.0),
        "concurrency": [curve for curve in curves if curve["points"]],
        "scatter": quality_scatter(names, rows),
    }


# --- Export ------------------------------------------------------------------------------------

EXPORT_COLUMNS = [
    "benchmark", "metric", "label", "unit", "config", "config_id", "baseline", "runs",
    "median", "min", "max", "n", "count", "figure", "delta", "delta_unit", "delta_pct", "verdict",
    "over",
]


def export_rows(groups: Sequence[Group], rows: Sequence[TableRow]) -> list[dict[str, Any]]:
    """The table flattened to one row per metric and config, figures in the unit shown."""
    return [
        _export_row(row, group.name, cell)
        for row in rows
        for group, cell in zip(groups, row["cells"], strict=True)
    ]


def _export_row(row: TableRow, config: str, cell: TableCell) -> dict[str, Any]:
    metric = (row["benchmark"], row["key"])
    # A position's acceptance is a 0..1 share shown in % (its row has no ScoredMetric to give the scale).
    scale = SCALES.get(metric, 100.0 if row["key"].startswith(POSITION_KEY) else 1.0)
    spread, tally, delta = cell["spread"], cell["tally"], cell["delta"]
    shares = metric in COUNTS or row["unit"] == "%"
    return {
        "benchmark": row["benchmark"], "metric": row["key"], "label": row["label"], "unit": row["unit"],
        "config": config, "config_id": cell["config_id"], "baseline": cell["baseline"], "runs": cell["runs"],
        "median": spread["median"] * scale if spread else None,
        "min": spread["min"] * scale if spread else None,
        "max": spread["max"] * scale if spread else None,
        "n": spread["n"] if spread else (tally["n"] if tally else None),
        "count": tally["count"] if tally else None,
        "figure": cell["text"],
        # A difference of two shares is in percentage points.
        "delta": None if delta is None else delta * (100 if shares else scale),
        "delta_unit": "pp" if shares else row["unit"],
        "delta_pct": cell["delta_pct"], "verdict": cell["verdict"], "over": cell["over"],
    }
