"""One verdict per claimed figure, decided in one order (docs/claims.md, Verdicts).

1. ``exceeds-hardware``: the claim is above the roofline of the hardware it states (claims.core.plausible),
   whether or not anything ran;
2. ``not-comparable``: this machine cannot reproduce what the claim ran on (two nodes, another GPU...);
3. ``lower`` / ``higher``: the measured median is lower / higher than the claim, the claim lies outside
   the median's 95 % bootstrap interval, and further from the median than both the tolerance and the
   claim's own stated spread;
4. ``inconclusive``: the interval's half-width is wider than the tolerance (``runs_needed`` says how many
   runs would narrow it, as a half-width shrinks with the square root of n);
5. ``reproduced``.

``unmeasured`` is a figure whose runs gave no value (they failed, or the engine reports no such figure).
The interval is measure.stats's bootstrap over the runs' values, one per run. Plain Python, no Django.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from measure.stats import interval, summarize

__all__ = ["VERDICTS", "FigureVerdict", "decide"]

VERDICTS = (
    "exceeds-hardware",
    "not-comparable",
    "lower",
    "higher",
    "inconclusive",
    "reproduced",
    "unmeasured",
)


@dataclass(frozen=True)
class FigureVerdict:
    """A claimed figure held against the runs' values: median, interval, n, delta and the verdict."""

    verdict: str
    claimed: float
    median: float | None = None
    ci: tuple[float, float] | None = None
    n: int = 0
    delta_pct: float | None = None
    runs_needed: int | None = None
    ceiling: dict[str, Any] | None = None
    reason: str = ""
    values: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide(
    claimed: float,
    values: Sequence[float],
    tolerance_pct: float,
    *,
    stated_spread: float | None = None,
    ceiling: dict[str, Any] | None = None,
    not_comparable: str = "",
) -> FigureVerdict:
    """The verdict of ``claimed`` against ``values`` (one per run, the claim's unit).

    :param ceiling: the roofline's arithmetic when the claim exceeds it (claims.core.plausible).
    :param not_comparable: why this machine cannot reproduce the figure ("" when it can).
    """
    measured = _measured(claimed, values)
    if ceiling is not None:
        return FigureVerdict("exceeds-hardware", claimed, ceiling=ceiling, **measured)
    if not_comparable:
        return FigureVerdict("not-comparable", claimed, reason=not_comparable, **measured)
    if not measured["n"]:
        return FigureVerdict("unmeasured", claimed, reason="no run gave a value for this figure")
    median, (low, high), n = measured["median"], measured["ci"], measured["n"]
    distance = abs(claimed - median)
    tolerance = abs(median) * tolerance_pct / 100
    if not low <= claimed <= high and distance > tolerance and distance > (stated_spread or 0.0):
        return FigureVerdict("lower" if median < claimed else "higher", claimed, **measured)
    half_width = (high - low) / 2
    if half_width > tolerance:
        return FigureVerdict(
            "inconclusive", claimed, runs_needed=runs_needed(n, half_width, tolerance), **measured
        )
    return FigureVerdict("reproduced", claimed, **measured)


def _measured(claimed: float, values: Sequence[float]) -> dict[str, Any]:
    """median, ci, n, delta_pct and values of the runs' values (n 0 when there are none)."""
    spread = summarize(values)
    if spread is None:
        return {"n": 0, "values": []}
    median = spread["median"]
    delta = (median - claimed) / claimed * 100 if claimed else None
    return {
        "median": median,
        "ci": interval(spread),
        "n": spread["n"],
        "delta_pct": delta,
        "values": [float(v) for v in values],
    }


def runs_needed(n: int, half_width: float, tolerance: float) -> int:
    """Runs that would narrow the interval's half-width to the tolerance (it shrinks as 1/sqrt(n))."""
    if tolerance <= 0:
        return n
    return max(n + 1, math.ceil(n * (half_width / tolerance) ** 2))
