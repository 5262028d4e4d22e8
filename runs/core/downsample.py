"""Thinning a long series for a chart: min/max per bucket, so spikes and dips survive.

A run page draws one point per sample; a run of 10,000 requests would send and draw 10,000
points per series although a chart is ~1,000 pixels wide. `keep` picks which samples to send:
the series is cut into equal buckets and, in each, the samples holding the lowest and the
highest value of every charted field are kept (plus the first and the last sample), so each
field's envelope is drawn exactly at the bucket's resolution.
"""
from __future__ import annotations

from collections.abc import Sequence

Row = Sequence[float | None]
INF = float("inf")


def bucket_count(max_points: int, fields: int) -> int:
    """How many buckets fit `max_points` kept samples when each keeps a min and a max per field."""
    return max(1, (max_points - 2) // (2 * max(1, fields)))


def keep(rows: Sequence[Row], max_points: int) -> list[int]:
    """The indexes (ascending) of the rows to draw: all of them when they fit in `max_points`.

    Each row holds the charted fields of one sample (None where a sample has no value); the
    result never holds more than `max_points` indexes, and always the first and the last row.
    """
    n = len(rows)
    if n <= max_points:
        return list(range(n))
    fields = max(len(row) for row in rows)
    buckets = bucket_count(max_points, fields)
    kept = {0, n - 1}
    for f in range(fields):
        column = [row[f] if f < len(row) else None for row in rows]
        # Missing values never win: +inf for the minimum, -inf for the maximum.
        low = [INF if v is None else v for v in column]
        high = [-INF if v is None else v for v in column]
        for b in range(buckets):
            span = range(b * n // buckets, (b + 1) * n // buckets)
            if not span:
                continue
            i, j = min(span, key=low.__getitem__), max(span, key=high.__getitem__)
            kept.update(k for k, v in ((i, low[i]), (j, high[j])) if v not in (INF, -INF))
    return sorted(kept)
