"""Energy per output token and per request, from a run's power readings and its requests' times.

One definition (docs/metrics.md "Energy"): the power readings are a step function (each holds
until the next); a group of requests costs the integral of (power - idle baseline) over the
union of their windows, so overlapping requests (concurrency) are not counted twice.
- joules per output token: over the requests' decode windows (first token to last), / tokens
- joules per request: over the whole requests (sent to last token), / requests
The idle baseline is measured before the job, with the engine loaded and idle; model load and
the baseline itself lie outside every request window, so they are left out.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "WINDOW_FIELDS", "Window", "baseline_power", "energy_summary", "joules_over", "merge", "windows_of",
]

# What a request row needs for its window (the run's recorder keeps these of every request).
WINDOW_FIELDS = ("start_t", "ttft_s", "e2e_s", "output_tokens", "output_type", "concurrency")


@dataclass(frozen=True)
class Window:
    """One request in run time (seconds since the run started)."""

    start: float
    first: float | None  # first answer token; None when nothing came
    end: float
    tokens: int | None
    output_type: str | None = None
    concurrency: int | None = None


def windows_of(rows: Iterable[Mapping[str, Any]]) -> list[Window]:
    """The windows of the request rows that carry their start (start_t) and duration (e2e_s)."""
    found = []
    for row in rows:
        start, e2e = row.get("start_t"), row.get("e2e_s")
        if start is None or e2e is None:
            continue
        ttft = row.get("ttft_s")
        first = start + ttft if ttft is not None else None
        concurrency = row.get("concurrency")
        found.append(
            Window(
                start,
                first,
                start + e2e,
                row.get("output_tokens"),
                row.get("output_type"),
                int(concurrency) if concurrency is not None else None,
            )
        )
    return found


def merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals, as sorted disjoint intervals."""
    merged: list[tuple[float, float]] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def joules_over(
    power: Sequence[tuple[float, float]], intervals: Iterable[tuple[float, float]], baseline_w: float
) -> float:
    """Integral of (power - baseline_w) over the union of the intervals; `power` is (t, watts)
    sorted by t, each reading holding until the next (the first also before it)."""
    times = [t for t, _ in power]
    total = 0.0
    for a, b in merge(intervals):
        i = max(bisect.bisect_right(times, a) - 1, 0)  # the reading in effect at a
        while i < len(power) and (i == 0 or times[i] < b):
            held_from = times[i] if i else float("-inf")
            held_to = times[i + 1] if i + 1 < len(power) else float("inf")
            overlap = min(b, held_to) - max(a, held_from)
            if overlap > 0:
                total += (power[i][1] - baseline_w) * overlap
            i += 1
    return total


def baseline_power(readings: Iterable[Mapping[str, Any]], key: str) -> float | None:
    """The idle baseline: median power over the readings of the "baseline" phase."""
    values = [r[key] for r in readings if r.get("phase") == "baseline" and r.get(key) is not None]
    return statistics.median(values) if values else None


def energy_summary(
    power: Sequence[tuple[float, float]], baseline_w: float, windows: Sequence[Window]
) -> dict[str, Any] | None:
    """Joules per output token and per request over all windows, per output type and per
    concurrency level; None when no request has a window."""
    overall = _group(power, baseline_w, windows)
    if overall is None:
        return None
    return overall | {
        "baseline_w": round(baseline_w, 3),
        "by_output_type": _by(power, baseline_w, windows, "output_type"),
        "by_concurrency": _by(power, baseline_w, windows, "concurrency"),
    }


def _by(
    power: Sequence[tuple[float, float]], baseline_w: float, windows: Sequence[Window], field: str
) -> dict[str, Any]:
    keys = sorted({getattr(w, field) for w in windows if getattr(w, field) is not None})
    groups = {str(k): _group(power, baseline_w, [w for w in windows if getattr(w, field) == k]) for k in keys}
    return {k: g for k, g in groups.items() if g is not None}


def _group(
    power: Sequence[tuple[float, float]], baseline_w: float, windows: Sequence[Window]
) -> dict[str, Any] | None:
    if not windows or not power:
        return None
    decode = [(w.first, w.end) for w in windows if w.first is not None]
    tokens = sum(w.tokens or 0 for w in windows if w.first is not None)
    request_j = joules_over(power, [(w.start, w.end) for w in windows], baseline_w)
    decode_j = joules_over(power, decode, baseline_w)
    return {
        "j_per_token": round(decode_j / tokens, 6) if tokens else None,
        "j_per_request": round(request_j / len(windows), 6),
        "tokens": tokens,
        "requests": len(windows),
        "decode_s": round(sum(b - a for a, b in merge(decode)), 6),
    }
