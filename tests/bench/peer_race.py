"""The race's arithmetic, apart from any engine: CPU by difference, ratios over repeats, separability.

`make bench-peers` (tests/bench/peers.py) runs every tool at N and N + EXTRA requests and reads
their CPU seconds; this module turns those into CPU per 1,000 tokens (never a negative figure),
and a level's repeats into the closing "same-run race" line: SparkDash's worker row against the
best peer, as the median over repeats of the per-repeat ratio, or "not separable" when the two
tools' figures move more from repeat to repeat than they differ.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

WORKER = "SparkDash (worker)"  # `manage.py bench` through the worker: samples stored, live updates on
CORE = "SparkDash (core)"  # the concurrency job's core alone, no Django
OURS = (WORKER, CORE)
RACED = WORKER  # the row the closing lines compare with the best peer


def cpu_per_1k(small_s: float, large_s: float, extra_tokens: int) -> float | None:
    """CPU seconds per 1,000 tokens from two runs' CPU seconds, `extra_tokens` apart.

    None when the difference is not positive: start-up noise was larger than the extra
    requests' cost, and no figure is better than a negative or zero one.
    """
    if extra_tokens <= 0:
        raise ValueError("the larger run must generate more tokens")
    diff = large_s - small_s
    return diff / (extra_tokens / 1000) if diff > 0 else None


@dataclass(frozen=True)
class Verdict:
    """One goal at one level over the repeats: medians, the median ratio, and whether it separates."""

    ours: float
    best: float
    ratio: float
    repeats: int
    spread: float  # the larger of the two tools' max - min over repeats
    gap: float  # |median ours - median best|

    @property
    def separable(self) -> bool:
        return self.repeats < 2 or self.spread <= self.gap

    def line(self, streams: int, what: str) -> str:
        head = f"{streams} stream(s), {what}: SparkDash {self.ours:.3f}, best peer {self.best:.3f}, "
        tail = f", median of {self.repeats} repeats" if self.repeats > 1 else ""
        if not self.separable:
            return (
                f"{head}not separable (spread {self.spread:.3f} across repeats > gap {self.gap:.3f}; "
                f"median ratio {self.ratio:.2f}){tail}"
            )
        return f"{head}ratio {self.ratio:.2f} ({'met' if self.ratio <= 1 else 'not met'}){tail}"


def ratio(ours: float, best: float) -> float:
    """SparkDash's figure over the best peer's, by size (a TTFT offset may be negative)."""
    return abs(ours) / abs(best) if best else float("inf")


def best_of(values: Sequence[float], by_size: bool) -> float:
    """The best peer's figure: the smallest, or the one nearest zero for an offset."""
    return min(values, key=abs) if by_size else min(values)


def verdict(
    ours: Sequence[float | None], peers: Sequence[Sequence[float | None]], by_size: bool
) -> Verdict | None:
    """The goal over repeats: `ours[r]` and `peers[r]` (each peer's figure) are repeat r's.

    A repeat without SparkDash's figure or any peer's counts for nothing; None when none is left.
    With `by_size` (a TTFT offset, which may be negative), sizes are compared.
    """
    pairs = []
    for mine, theirs in zip(ours, peers, strict=True):
        measured = [v for v in theirs if v is not None]
        if mine is not None and measured:
            pairs.append((mine, best_of(measured, by_size)))
    if not pairs:
        return None
    size = abs if by_size else (lambda v: v)
    mine_all, best_all = [size(p[0]) for p in pairs], [size(p[1]) for p in pairs]
    return Verdict(
        ours=statistics.median(p[0] for p in pairs),
        best=statistics.median(p[1] for p in pairs),
        ratio=statistics.median(ratio(m, b) for m, b in pairs),
        repeats=len(pairs),
        spread=max(_spread(mine_all), _spread(best_all)),
        gap=abs(statistics.median(mine_all) - statistics.median(best_all)),
    )


def _spread(values: Sequence[float]) -> float:
    return max(values) - min(values)
