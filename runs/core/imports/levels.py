"""What an imported result file becomes: a PeerFile of Levels, one run each. Plain Python, no Django.

A Level's `figures` are summary entries under SparkDash's own metric keys (measure.catalog):
a spread over the tool's per-request values where the file has them, else the tool's stated
statistics as a spread. `stated` keeps the tool's own stated medians, in SparkDash's units, so a
test (and a reader) can hold the two equal. `notes` says, per figure, where the tool's definition
differs from SparkDash's (marked for translation; docs/metrics.md has the same table).
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from measure.stats import summarize
from measure.words import gettext_noop
from runs.core.refusal import Refusal

__all__ = ["Impossible", "Level", "PeerFile", "Unreadable", "inverse", "inverse_spread", "one_value",
           "spread_from_stats", "spreads"]


class Unreadable(Refusal):
    """A file that is not a result file SparkDash reads, or is cut short; nothing of it is stored."""


# How a refused figure is named: the file, its level, the field, and why (a Refusal of its own).
IMPOSSIBLE = gettext_noop("%(name)s, level %(level)s, %(field)s: %(why)s. Nothing of the file was stored.")


class Impossible(Unreadable):
    """A figure a file cannot have (negative, not a number, a first token after the last), raised
    where it is found; read_results names the file (`named`)."""

    def __init__(self, level: str, field: str, why: Refusal) -> None:
        super().__init__(IMPOSSIBLE, name="", level=level, field=field, why=why)
        self.level, self.field, self.why = level, field, why

    def named(self, name: str) -> Unreadable:
        """The refusal with the file's name."""
        return Unreadable(IMPOSSIBLE, name=name, level=self.level, field=self.field, why=self.why)


@dataclass(frozen=True)
class Level:
    """One benchmark or load level of a file: one imported run."""

    label: str  # how the file names it: "concurrency 4", "synchronous", "pp64 tg32"
    concurrency: int | None  # requests in flight at once, where the file says
    figures: dict[str, Any]
    stated: dict[str, float] = field(default_factory=dict)
    attempted: int = 0
    failed_by_reason: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    started: str | None = None  # ISO 8601, where the file says

    @property
    def failed(self) -> int:
        return sum(self.failed_by_reason.values())


@dataclass(frozen=True)
class PeerFile:
    """A result file as read: the tool that wrote it, how it was run, its levels."""

    tool: str  # one of runs.core.imports.TOOLS
    version: str  # "" where the file does not record it
    command: str  # "" where the file does not record it
    model: str
    levels: list[Level]
    base_url: str = ""
    backend: str = ""


def spreads(rows: Iterable[Mapping[str, Any]], keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The spread of each key over per-request rows, keys with no value left out (absent, never 0)."""
    materialized = list(rows)
    found: dict[str, dict[str, Any]] = {}
    for key in keys:
        values = [float(row[key]) for row in materialized if isinstance(row.get(key), int | float)]
        spread = summarize(values)
        if spread is not None:
            found[key] = {**spread, "mean": statistics.fmean(values)}
    return found


def spread_from_stats(
    median: Any, low: Any, high: Any, n: Any, scale: float = 1.0, mean: Any = None
) -> dict[str, Any] | None:
    """A spread from a tool's stated statistics (no per-request values to compute one from)."""
    if not all(isinstance(v, int | float) for v in (median, low, high)):
        return None
    count = int(n) if isinstance(n, int | float) else 0
    spread = {"median": median * scale, "min": low * scale, "max": high * scale, "n": count}
    return spread | ({"mean": mean * scale} if isinstance(mean, int | float) else {})


def inverse_spread(per_token: Mapping[str, Any]) -> dict[str, Any]:
    """A time-per-token spread read as tokens per second (its ends swap): decode from a stated TPOT."""
    return {"median": 1 / per_token["median"], "min": 1 / per_token["max"], "max": 1 / per_token["min"],
            "n": per_token["n"]}


def one_value(value: Any) -> dict[str, Any] | None:
    """A figure the tool states once for the level (its total throughput), as a spread of one."""
    if not isinstance(value, int | float):
        return None
    return {"median": float(value), "min": float(value), "max": float(value), "n": 1, "mean": float(value)}


def inverse(value: float | None) -> float | None:
    """1 / value, for a time per token read as tokens per second; None for nothing or zero."""
    return 1.0 / value if value else None
