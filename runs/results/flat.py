"""The flat results table, like llama-bench's: one row per run, and per load level of a concurrency
sweep, with what it ran (from the run's own provenance, so editing a config later changes no row)
and what it measured, each figure read as its page shows it (docs/metrics.md).

The results page, its CSV / Markdown / JSON downloads and `manage.py runs --format csv|md|json`
print these same rows.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.utils.translation import gettext, gettext_noop

from measure import catalog
from runs.core.scoring.headline import headline_of
from runs.core.typed_reads import figure, recorded, summary_of
from runs.models import Run

__all__ = [
    "HEADINGS", "SETUP_COLUMNS", "cell_text", "columns", "flat_rows", "heading", "markdown", "warning_codes",
]

SETUP_COLUMNS = [
    "run", "finished", "machine", "engine", "engine_kind", "simulator", "config", "revision", "model",
    "quantization", "draft_method", "lookahead", "job", "level",
]
# The job's headline shown in its unit (a share in %), its 95 % interval, and k of n where it counts.
HEADLINE_COLUMNS = [
    "headline", "headline_value", "headline_low", "headline_high", "headline_count", "headline_out_of",
]
# The heading of each column that is no catalogue metric, on the page and in the Markdown (the CSV
# and JSON keep the keys, for scripts); a metric's heading is its catalogue label and unit.
HEADINGS = {
    "run": gettext_noop("run"), "finished": gettext_noop("finished"), "machine": gettext_noop("machine"),
    "engine": gettext_noop("engine"), "engine_kind": gettext_noop("engine kind"),
    "simulator": gettext_noop("simulator"), "config": gettext_noop("config"),
    "revision": gettext_noop("revision"), "model": gettext_noop("model"),
    "quantization": gettext_noop("quantization"), "draft_method": gettext_noop("speculative method"),
    "lookahead": gettext_noop("lookahead"), "job": gettext_noop("job"), "level": gettext_noop("load level"),
    "headline": gettext_noop("headline"), "headline_value": gettext_noop("headline value"),
    "headline_low": gettext_noop("headline interval low"),
    "headline_high": gettext_noop("headline interval high"),
    "headline_count": gettext_noop("headline count"), "headline_out_of": gettext_noop("headline out of"),
    "warnings": gettext_noop("warnings"),
}


def columns() -> list[str]:
    """The table's columns: what the run ran with, then a column for each catalogue metric declared
    with one (measure.catalog), then the job's headline, then the kinds of the run's warnings."""
    figures = [key for key, declared in catalog.CATALOG.items() if declared.column]
    return SETUP_COLUMNS + figures + HEADLINE_COLUMNS + ["warnings"]


def heading(column: str) -> str:
    """A column's heading in the reader's language: a catalogue metric's label and unit, else the
    column's words (HEADINGS); never its key."""
    declared = catalog.CATALOG.get(column)
    if declared is None:
        return gettext(HEADINGS[column])
    unit = f", {declared.unit}" if declared.unit else ""
    return f"{gettext(declared.label)}{unit}"


def flat_rows(runs: Iterable[Run]) -> list[dict[str, Any]]:
    """The table's rows for `runs` (their config, engine and machine selected), in their order."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        summary = summary_of(run)
        tool = recorded(summary, "tool")  # an imported run: the tool that measured it
        base = _setup(run) | {"run": run.pk, "job": f"{run.job}: {tool}" if tool else run.job,
                              "finished": run.finished.isoformat() if run.finished else None}
        base |= _headline(run.job, summary) | {"warnings": warning_codes(run)}
        levels = recorded(summary, "levels", {})  # a load sweep's levels, by their load
        if not levels:
            level = recorded(summary, "concurrency") if tool else None
            rows.append(base | _figures(summary) | {"level": level})
            continue
        for level, figures in sorted(levels.items(), key=lambda item: int(item[0])):
            rows.append(base | _figures(figures) | {
                "level": int(level), "j_per_token": _energy(summary, ("by_concurrency", level)),
            })
    return rows


def warning_codes(run: Run) -> str | None:
    """The codes of the run's warnings ("client-bound, throttled"), None for none: a figure beside one
    is to be read with its warning (docs/metrics.md)."""
    codes = [w.get("kind") for w in run.warnings or [] if isinstance(w, Mapping)]  # stored under "kind"
    return ", ".join(str(code) for code in codes if code) or None


def _setup(run: Run) -> dict[str, Any]:
    """What the run ran with: its provenance snapshot, or the config as it is for a run that has none
    yet (queued, or failed before its engine answered)."""
    provenance = run.provenance if isinstance(run.provenance, dict) else {}
    settings: Mapping[str, Any] = provenance.get("config") or run.config.snapshot()
    engine, machine = settings.get("engine") or {}, settings.get("machine") or {}
    quantization = provenance.get("quantization")
    return {
        "machine": machine.get("name"), "engine": engine.get("name"), "engine_kind": engine.get("kind"),
        "simulator": engine.get("simulator"), "config": settings.get("name"), "model": settings.get("model"),
        "revision": run.revision.number if run.revision is not None else None,
        "quantization": quantization or settings.get("quantization") or None,
        "draft_method": settings.get("speculative_method") or None, "lookahead": settings.get("lookahead"),
    }


def _figures(figures: Mapping[str, Any]) -> dict[str, Any]:
    """Each column metric's one value as its page shows it (a median, or pooled over the run)."""
    keys = [key for key, declared in catalog.CATALOG.items() if declared.column]
    shown = {key: figure(figures, key) for key in keys}
    return shown | {"j_per_token": _energy(figures, ())}


def _energy(summary: Mapping[str, Any], path: Sequence[str]) -> float | None:
    """Joules per output token over the run (or one of its groups), where power was read."""
    found: Any = (recorded(summary, "telemetry", {}).get("energy")) or {}
    for key in path:
        found = (found or {}).get(key) or {}
    value = found.get("j_per_token") if isinstance(found, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def _headline(job: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    """The job's headline (its kind's) in its unit: a quality job's score, a sweep's best."""
    found = headline_of(job, summary)
    if found is None:
        return dict.fromkeys(HEADLINE_COLUMNS)
    scale = found.metric.scale
    return {"headline": found.metric.label, "headline_value": found.value * scale,
            "headline_low": None if found.low is None else found.low * scale,
            "headline_high": None if found.high is None else found.high * scale,
            "headline_count": found.count, "headline_out_of": found.out_of}


def markdown(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """The rows as a Markdown table (llama-bench's `-o md`) under the columns' headings: numbers to
    2 decimals, empty for none."""
    head = "| " + " | ".join(heading(c) for c in columns) + " |"
    lines = [head, "|" + "|".join(" --- " for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(cell_text(row.get(c)).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def cell_text(value: Any) -> str:
    """One cell as the page and the Markdown show it: numbers to 2 decimals, empty for none."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("\n", " ")
