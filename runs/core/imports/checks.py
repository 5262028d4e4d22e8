"""Figures no result file can hold, refused before anything of the file is stored. Plain Python.

Every number of a level's figures must be finite, and inside its metric's limits where the
catalogue declares them (measure.catalog: a time or a speed is at least 0, an acceptance rate 0
to 1). A TTFT is part of its request's E2E, so each order statistic (min, median, max) and the
mean of the TTFTs is at most the E2Es' (what holds for every request holds for them); readers
with per-request values check each request too (runs.core.imports.vllm). The first figure that
fails is refused naming the file, the level and the field (levels.Impossible).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from measure import catalog
from measure.words import gettext_noop
from runs.core.imports.levels import Impossible, Level, PeerFile
from runs.core.refusal import Refusal

__all__ = ["check_file", "number"]

NOT_FINITE = gettext_noop("%(value)s is not a finite number")
BELOW = gettext_noop("%(value)s is below %(low)s, impossible for %(metric)s")
ABOVE = gettext_noop("%(value)s is above %(high)s, impossible for %(metric)s")
TTFT_AFTER_E2E = gettext_noop(
    "the TTFTs' %(statistic)s, %(ttft)s s, is longer than the E2Es' %(statistic)s, "
    "%(e2e)s s: a request's first token cannot come after its last"
)
# The entries of a spread that are values of its metric (not counts, flags or intervals).
VALUES = ("median", "min", "max", "mean", "p90", "p95", "p99")
ORDERED = ("min", "median", "max", "mean")  # each at most the E2Es' own when every TTFT is
SLACK = 1e-3  # a stated file's rounding: a TTFT within 0.1 % of its E2E is not refused


def number(value: float) -> str:
    """A figure as a refusal shows it: nan, inf, -0.005, 1e+308."""
    return f"{value:g}"


def check_file(name: str, peer: PeerFile) -> None:
    """Refuses (levels.Unreadable, naming file, level and field) the first impossible figure."""
    for level in peer.levels:
        try:
            _check_level(level)
        except Impossible as exc:
            raise exc.named(name) from None


def _check_level(level: Level) -> None:
    for key, figure in level.figures.items():
        if isinstance(figure, Mapping):
            for stat, value in _values(figure):
                _check_value(level.label, f"{key} ({stat})", key, value)
    for key, value in level.stated.items():
        if isinstance(value, int | float):
            _check_value(level.label, f"{key} (stated)", key.removesuffix("_mean"), float(value))
    _check_ttft_within_e2e(level)


def _values(figure: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    for stat in VALUES:
        value = figure.get(stat)
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield stat, float(value)


def _check_value(level: str, field: str, key: str, value: float) -> None:
    if not math.isfinite(value):
        raise Impossible(level, field, Refusal(NOT_FINITE, value=number(value)))
    metric = catalog.CATALOG.get(key)
    if metric is None or metric.allows(value):
        return
    label = Refusal(metric.label)  # translated where the refusal is shown
    if metric.low is not None and value < metric.low:
        why = Refusal(BELOW, value=number(value), low=number(metric.low), metric=label)
    else:
        assert metric.high is not None
        why = Refusal(ABOVE, value=number(value), high=number(metric.high), metric=label)
    raise Impossible(level, field, why)


def _check_ttft_within_e2e(level: Level) -> None:
    ttft, e2e = level.figures.get("ttft_s"), level.figures.get("e2e_s")
    if not (isinstance(ttft, Mapping) and isinstance(e2e, Mapping)):
        return
    for stat in ORDERED:
        first, last = ttft.get(stat), e2e.get(stat)
        if isinstance(first, int | float) and isinstance(last, int | float) and first > last * (1 + SLACK):
            why = Refusal(TTFT_AFTER_E2E, statistic=stat, ttft=number(first), e2e=number(last))
            raise Impossible(level.label, f"ttft_s ({stat})", why)
