"""Statistics every figure is reported with (docs/metrics.md, How figures are reported).

A Spread is the median, min, max and the number of values n, and since issue 18 also the 90th
and 99th percentiles (nearest rank) and a 95 % bootstrap confidence interval for the median and
each percentile. Summaries stored before then hold only {median, min, max, n}; every reader
treats the newer keys as optional.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, NotRequired, TypedDict

import numpy as np

__all__ = [
    "CONFIDENCE",
    "PERCENTILES",
    "RESAMPLES",
    "SEED",
    "Spread",
    "interval",
    "percentile",
    "share_interval",
    "summarize",
    "summarize_rows",
]

# (summary key, percent, values needed for the percentile to be more than the largest value)
PERCENTILES: tuple[tuple[str, int, int], ...] = (("p90", 90, 10), ("p99", 99, 100))
RESAMPLES = 1000
# A fixed seed: the same values always give the same interval, so a page reads the same on reload.
SEED = 18
CONFIDENCE = 0.95


class Spread(TypedDict):
    """A figure over its values; the keys after n are absent in summaries stored before issue 18."""

    median: float
    min: float
    max: float
    n: int
    median_ci: NotRequired[list[float] | None]
    p90: NotRequired[float]
    p90_ci: NotRequired[list[float] | None]
    p90_is_max: NotRequired[bool]
    p99: NotRequired[float]
    p99_ci: NotRequired[list[float] | None]
    p99_is_max: NotRequired[bool]


def percentile(ordered: Sequence[float], percent: float) -> float:
    """The nearest-rank percentile of sorted values: the value at rank ceil(percent/100 x n)."""
    return ordered[_rank(percent, len(ordered)) - 1]


def _rank(percent: float, n: int) -> int:
    # percent x n first: for whole percents the product is exact, so ceil() never rounds up
    # a result like 63.00000000000001.
    return max(1, math.ceil(percent * n / 100))


def _order_draws(rng: np.random.Generator, size: int, ordered: Sequence[float], rank: int) -> np.ndarray:
    """The rank-th smallest (from 1) of each of `size` bootstrap resamples of the sorted values.

    A resample is n values ordered[floor(n x U)] for n uniform U; its rank-th smallest is
    ordered[floor(n x U_(rank))], and U_(rank), the rank-th smallest of n uniforms, is
    Beta(rank, n + 1 - rank): one draw instead of sorting n resampled values.
    """
    n = len(ordered)
    return _at(ordered, rng.beta(rank, n + 1 - rank, size))


def _median_draws(rng: np.random.Generator, size: int, ordered: Sequence[float]) -> np.ndarray:
    """The median of each of `size` bootstrap resamples (for even n the mean of its two middle values)."""
    n = len(ordered)
    if n % 2:
        return _order_draws(rng, size, ordered, n // 2 + 1)
    rank = n // 2
    low = rng.beta(rank, n + 1 - rank, size)
    # The other n - rank uniforms lie above `low`, uniform: the smallest of them is next.
    high = low + (1 - low) * (1 - rng.random(size) ** (1 / (n - rank)))
    return (_at(ordered, low) + _at(ordered, high)) / 2


def _at(ordered: Sequence[float], uniforms: np.ndarray) -> np.ndarray:
    n = len(ordered)
    return np.asarray(ordered)[np.minimum(n - 1, (n * uniforms).astype(np.int64))]


def _bootstrap(draws: Callable[[np.random.Generator, int], np.ndarray]) -> list[float]:
    """The statistic's 95 % percentile-bootstrap interval over RESAMPLES seeded resamples.

    numpy draws all resamples at once: a level's summary took about 55 ms of the measuring
    process's CPU drawing them one by one in Python (issue 41's profile), a few hundred us now.
    """
    drawn = np.sort(draws(np.random.default_rng(SEED), RESAMPLES)).tolist()
    tail = (1 - CONFIDENCE) / 2 * 100
    return [percentile(drawn, tail), percentile(drawn, 100 - tail)]


def summarize(values: Iterable[float | None], intervals: bool = True) -> Spread | None:
    """The Spread of the values that are present; None when there are none.

    One value has no interval (median_ci None). Without `intervals` the spread is just median,
    min, max and n (a live run's summary so far: the bootstrap is the costly part, and the run's
    end computes it). A percentile from fewer values than it needs is the largest value: flagged
    `pNN_is_max`, and without an interval (a resample's largest value can never exceed the
    sample's, so its bootstrap says nothing).
    """
    ordered = sorted(float(v) for v in values if v is not None)
    if not ordered:
        return None
    n = len(ordered)
    spread: Spread = {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1], "n": n}
    if not intervals:
        return spread
    spread["median_ci"] = _bootstrap(partial(_median_draws, ordered=ordered)) if n > 1 else None
    for key, percent, needed in PERCENTILES:
        rank = _rank(percent, n)
        ci = None if n < needed else _bootstrap(partial(_order_draws, ordered=ordered, rank=rank))
        extra = {key: ordered[rank - 1], f"{key}_is_max": n < needed, f"{key}_ci": ci}
        spread.update(extra)  # type: ignore[typeddict-item]
    return spread


def interval(spread: Mapping[str, Any]) -> tuple[float, float]:
    """The median's 95 % interval; the [min, max] range where the spread has none.

    A spread has none when it was stored before intervals were, or holds one value (then its
    range is that one value).
    """
    ci = spread.get("median_ci")
    if ci:
        return float(ci[0]), float(ci[1])
    return float(spread["min"]), float(spread["max"])


def summarize_rows(
    rows: Iterable[Mapping[str, Any]], keys: Iterable[str], intervals: bool = True
) -> dict[str, Spread | None]:
    """One Spread per key over a list of per-request rows."""
    materialized = list(rows)
    return {key: summarize((row.get(key) for row in materialized), intervals) for key in keys}


def figure_value(figure: Mapping[str, Any] | None) -> float | None:
    """A summary figure's one value: a pooled figure's "pooled" (acceptance, tokens per
    verification: runs.core.request_figures.pooled_figures), a spread's median; None without one."""
    if not isinstance(figure, Mapping):
        return None
    value = figure.get("pooled", figure.get("median"))
    return float(value) if isinstance(value, int | float) else None


# The normal quantile of CONFIDENCE, two-sided (1.96 for 95 %).
_Z = statistics.NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)


def share_interval(k: float, n: float) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n trials, as fractions (None when n is 0).

    Used for a quality score (pass@1, accuracy, needles found): unlike the normal approximation
    it stays inside [0, 1] and is not zero-width at 0 or n.
    """
    if n <= 0:
        return None
    p, z2 = k / n, _Z * _Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)
