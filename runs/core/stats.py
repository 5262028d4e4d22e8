"""Statistics every figure is reported with: median, min, max and the repetition count."""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict


class Spread(TypedDict):
    median: float
    min: float
    max: float
    n: int


def summarize(values: Iterable[float | None]) -> Spread | None:
    """Median, min, max and n of the values that are present; None when there are none."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    return {
        "median": statistics.median(present),
        "min": min(present),
        "max": max(present),
        "n": len(present),
    }


def summarize_rows(rows: Iterable[Mapping[str, Any]], keys: Iterable[str]) -> dict[str, Spread | None]:
    """One Spread per key over a list of per-request rows."""
    materialized = list(rows)
    return {key: summarize(row.get(key) for row in materialized) for key in keys}
