"""One config's figures from each tool side by side, load level by load level.

SparkDash's own speed runs (one stream) and concurrency runs (each level), and each imported run
(runs.core.imports), give per tool and level the latest succeeded run's medians. Each row is one
metric at one level: the tools' figures, how far apart they are (the largest over the smallest,
minus one), and per tool where its definition differs from SparkDash's. An imported run whose file
did not match the config, imported anyway, is flagged (`accepted_mismatch`): its figures may not be
this config's.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext

from measure import catalog
from measure.stats import figure_value
from runs.core.imports import TOOLS
from runs.core.registry import JOBS
from runs.core.typed_reads import recorded, summary_of
from runs.models import Run

__all__ = ["OURS", "Cell", "Level", "accepted_mismatch", "cross_tool"]

OURS = "SparkDash"
COMPARED = ("ttft_s", "decode_tps_client", "tpot_s", "itl_s", "e2e_s", "total_tps", "prefill_tps",
            "decode_tps_engine")


@dataclass(frozen=True)
class Cell:
    """One tool's figure at one level: the value, the run it came from, its definitional note."""

    value: float | None
    run: Run
    note: str = ""
    mismatch: str = ""  # what was accepted of a file that did not match the config, "" for none


@dataclass
class Level:
    """One load level: per metric, each tool's cell, and the spread between tools."""

    concurrency: int
    tools: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def runs(self) -> list[Run]:
        """One run per tool at this level (a direct comparison's selection)."""
        found = {cell.run.pk: cell.run for row in self.rows for cell in row["cells"].values() if cell}
        return list(found.values())

    def mismatched(self) -> list[tuple[Run, str]]:
        """This level's runs imported from a file that did not match the config, with what was accepted."""
        return [(run, text) for run in self.runs() if (text := accepted_mismatch(run))]


def cross_tool(runs: Iterable[Run]) -> list[Level]:
    """The levels, lowest first, from runs newest first (the first per tool and level is kept)."""
    found: dict[int, dict[str, tuple[Run, Mapping[str, Any]]]] = {}
    for run in runs:
        for tool, concurrency, figures in _entries(run):
            found.setdefault(concurrency, {}).setdefault(tool, (run, figures))
    return [_level(c, found[c]) for c in sorted(found)]


def _entries(run: Run) -> list[tuple[str, int, Mapping[str, Any]]]:
    summary = summary_of(run)
    spec = JOBS.get(run.job)
    load = spec.load if spec else None  # SparkDash's own runs are read by the load their kind says
    if load == "single":
        return [(OURS, 1, summary)]
    if load == "levels":
        levels = recorded(summary, "levels", {})
        return [(OURS, int(c), level | {"e2e_s": level.get("finish_s")}) for c, level in levels.items()]
    tool, concurrency = recorded(summary, "tool"), recorded(summary, "concurrency")
    if tool in TOOLS and concurrency:
        return [(TOOLS[tool], int(concurrency), summary)]
    return []


def _level(concurrency: int, by_tool: dict[str, tuple[Run, Mapping[str, Any]]]) -> Level:
    tools = sorted(by_tool, key=lambda t: (t != OURS, t))
    level = Level(concurrency, tools)
    for key in COMPARED:
        cells = {tool: _cell(key, *by_tool[tool]) for tool in tools}
        values = [c.value for c in cells.values() if c and c.value]
        if not values:
            continue
        spread = max(values) / min(values) - 1 if len(values) > 1 else None
        level.rows.append({"metric": catalog.get(key), "cells": cells, "spread": spread})
    return level


def _cell(key: str, run: Run, figures: Mapping[str, Any]) -> Cell | None:
    value = figure_value(figures.get(key))
    if value is None:
        return None
    return Cell(value, run, str((figures.get("notes") or {}).get(key, "")), accepted_mismatch(run))


def accepted_mismatch(run: Run) -> str:
    """An imported run's accepted mismatch in the reader's language ("model: gemma-3-270m ≠
    /models/sim-moe.gguf"), "" where its file matched its config."""
    imported = (run.provenance or {}).get("imported_from") or {}
    found = imported.get("accepted_mismatch") or []
    return "; ".join(f"{gettext(m['what'])}: {m['file']} ≠ {m['config']}" for m in found)
