"""One benchmark figure: its value against a reference measured in the same run, and its goal."""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

__all__ = ["figure", "not_measured", "percentiles"]


def figure(
    name: str,
    value: float | None,
    unit: str,
    *,
    reference: float | None = None,
    reference_name: str = "",
    goal: str = "",
    met: bool | None = None,
    note: str = "",
) -> dict[str, Any]:
    """A figure as the runner prints and stores it.

    :param reference: the same-run measurement the value is compared with; ratio = value / reference.
    :param goal: the goal in words ("p99 < 0.5 ms"); met says whether it holds (None: no goal).
    """
    ratio = value / reference if value is not None and reference else None
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "reference": reference,
        "reference_name": reference_name,
        "ratio": ratio,
        "goal": goal,
        "met": met,
        "note": note,
    }


def not_measured(name: str, unit: str, reason: str, goal: str = "") -> dict[str, Any]:
    """A figure that could not be measured in this run, with the reason why."""
    return figure(name, None, unit, goal=goal, note=f"not measured: {reason}")


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of a sample (p99 by linear interpolation; a lone value is all three)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    if len(ordered) == 1:
        return {"p50": ordered[0], "p99": ordered[0], "max": ordered[0]}
    p99 = statistics.quantiles(ordered, n=100, method="inclusive")[98]
    return {"p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}
