"""Figures of a machine's real traffic over a window: plain Python over records, no queries.

A record is a TrafficRecord row or a dict as traffic.serialize.record_json gives it (`arrived`
a datetime, an ISO 8601 string or epoch seconds). Definitions:

- requests per minute and errors, per bucket of the window (one minute up to a 1-hour window;
  longer windows use window ÷ 60, so a chart keeps about 60 points);
- decode tok/s: the median of the requests' client-side decode tok/s, per output type and bucket;
- acceptance: accepted ÷ drafted tokens summed over the requests that drafted, per type and bucket;
- new-input share: sum of new prompt tokens ÷ sum of prompt tokens (docs/metrics.md, new-input
  share; the field report's agent sessions computed 9.3 % of what they sent);
- generation share: sum of generation time ÷ sum of end-to-end time (the field report: ~75 %);
- TTFT p50/p90/p99 with n: below 100 requests p99 is about the slowest request, not a 1-in-100 figure;
- errors: requests with an error or an HTTP status of 400 or more, and their share.
"""
from __future__ import annotations

import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from measure import pooled
from measure.stats import summarize
from measure.words import gettext_noop

__all__ = [
    "DEFAULT_WINDOW", "WINDOWS", "bucket_seconds", "by_output_type", "cause", "errors", "field",
    "generation_share", "is_error", "new_input_share", "per_bucket", "percentile", "ttft_percentiles",
    "when", "window_start", "window_stats",
]

# The page's window choices: name -> seconds.
WINDOWS = {"15m": 15 * 60, "1h": 3600, "24h": 24 * 3600}
# Marked for the catalogue: the page's select translates them.
WINDOW_LABELS = {
    "15m": gettext_noop("last 15 min"), "1h": gettext_noop("last hour"), "24h": gettext_noop("last 24 h"),
}
DEFAULT_WINDOW = "1h"
TAIL_N = 100  # below this many requests, p99 is the slowest one or two


def field(record: Any, name: str) -> Any:
    """One field of a record, whether a dict or a row."""
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)


def when(record: Any) -> datetime:
    """The record's arrival as an aware datetime."""
    arrived = field(record, "arrived")
    if isinstance(arrived, datetime):
        return arrived
    if isinstance(arrived, int | float):
        return datetime.fromtimestamp(arrived, UTC)
    return datetime.fromisoformat(str(arrived))


def is_error(record: Any) -> bool:
    """Whether the client got an error: an error text, or an HTTP status of 400 or more."""
    return bool(field(record, "error")) or int(field(record, "status") or 200) >= 400


def errors(records: Sequence[Any]) -> dict[str, Any]:
    """How many requests failed, of how many, the share (None without requests), and by_cause:
    [cause, count] for the CAUSES most frequent causes, most frequent first."""
    failed = [r for r in records if is_error(r)]
    causes = Counter(cause(r) for r in failed).most_common(CAUSES)
    return {"count": len(failed), "n": len(records), "share": len(failed) / len(records) if records else None,
            "by_cause": [[text, n] for text, n in causes]}


CAUSES = 5
_URL = re.compile(r"\s*(at )?https?://\S*?(?=:?(\s|$))")


def cause(record: Any) -> str:
    """Why a request failed, in a form many failures share: its error without the engine's URL
    (first CAUSE_CHARS characters), else its HTTP status."""
    text = str(field(record, "error") or "")
    if not text:
        return f"HTTP {field(record, 'status')}"
    return _URL.sub("", text).strip()[:CAUSE_CHARS]


CAUSE_CHARS = 120


def _ratio(records: Iterable[Any], part: str, whole: str) -> dict[str, Any] | None:
    """Sum of `part` ÷ sum of `whole` over the records that have both (and a positive whole)."""
    pairs = [(field(r, part), field(r, whole)) for r in records]
    kept = [(float(p), float(w)) for p, w in pairs if p is not None and w is not None and w > 0]
    total = sum(w for _, w in kept)
    if not kept or total <= 0:
        return None
    top = sum(p for p, _ in kept)
    return {"share": top / total, part: top, whole: total, "n": len(kept)}


def new_input_share(records: Iterable[Any]) -> dict[str, Any] | None:
    """New prompt tokens ÷ prompt tokens over the requests that report both."""
    return _ratio(records, "new_prompt_tokens", "prompt_tokens")


def generation_share(records: Iterable[Any]) -> dict[str, Any] | None:
    """Generation time ÷ end-to-end time over the requests that report both."""
    return _ratio(records, "generation_s", "e2e_s")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the sorted values."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ttft_percentiles(records: Iterable[Any]) -> dict[str, Any] | None:
    """TTFT p50, p90 and p99 in seconds with n; `note` says how to read p99 below TAIL_N requests."""
    values = [float(v) for v in (field(r, "ttft_s") for r in records) if v is not None]
    if not values:
        return None
    n = len(values)
    note = "" if n >= TAIL_N else (
        f"only {n} request{'s' if n != 1 else ''}: p99 is about the slowest one, not a 1-in-100 figure"
    )
    return {"p50": percentile(values, 50), "p90": percentile(values, 90), "p99": percentile(values, 99),
            "n": n, "note": note}


def bucket_seconds(window_s: int) -> int:
    """One minute up to an hour's window; longer windows in whole minutes, about 60 buckets."""
    return max(60, (window_s // 60) // 60 * 60)


def window_start(end: datetime, window_s: int) -> datetime:
    """The start of the window ending at `end`, moved back to a bucket's boundary (UTC epoch), so
    that the buckets stay the same from one refresh to the next."""
    size = bucket_seconds(window_s)
    start = end.timestamp() - window_s
    return datetime.fromtimestamp(start - start % size, UTC)


def _bucket_index(record: Any, start: datetime, size: int, count: int) -> int | None:
    """The record's bucket; one that arrived at the window's very end goes in the last bucket."""
    offset = (when(record) - start).total_seconds()
    if offset < 0 or offset > count * size:
        return None
    return min(int(offset // size), count - 1)


def per_bucket(records: Iterable[Any], start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Requests per minute and errors in each bucket from start to end (empty buckets included)."""
    size = bucket_seconds(int((end - start).total_seconds()))
    count = max(1, math.ceil((end - start).total_seconds() / size))
    requests, failed = [0] * count, [0] * count
    for record in records:
        index = _bucket_index(record, start, size, count)
        if index is not None:
            requests[index] += 1
            failed[index] += is_error(record)
    return [
        {"t": (start + timedelta(seconds=i * size)).isoformat(), "requests": requests[i],
         "per_minute": requests[i] * 60 / size, "errors": failed[i]}
        for i in range(count)
    ]


def _acceptance(records: Iterable[Any]) -> float | None:
    """Acceptance pooled over the records that drafted (measure.pooled)."""
    counts = [(field(r, pooled.ACCEPTED_TOKENS) or 0, field(r, pooled.DRAFT_TOKENS)) for r in records]
    drafting = [(a, d) for a, d in counts if d]
    return pooled.acceptance(sum(a for a, _ in drafting), sum(d for _, d in drafting))


def _type_buckets(records: Sequence[Any], start: datetime, end: datetime) -> dict[str, dict[int, list[Any]]]:
    size = bucket_seconds(int((end - start).total_seconds()))
    count = max(1, math.ceil((end - start).total_seconds() / size))
    grouped: dict[str, dict[int, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        index = _bucket_index(record, start, size, count)
        if index is not None and field(record, "output_type"):
            grouped[field(record, "output_type")][index].append(record)
    return grouped


def by_output_type(records: Sequence[Any], start: datetime, end: datetime) -> dict[str, dict[str, Any]]:
    """Per output type: its decode tok/s spread and acceptance over the window, and both per bucket.

    Buckets without a figure are left out of `points` (a chart draws a gap-free line through the rest).
    """
    size = bucket_seconds(int((end - start).total_seconds()))
    result: dict[str, dict[str, Any]] = {}
    for output_type, buckets in sorted(_type_buckets(records, start, end).items()):
        points = []
        for index, bucket in sorted(buckets.items()):
            speeds = [v for v in (field(r, "decode_tps_client") for r in bucket) if v is not None]
            points.append({
                "t": (start + timedelta(seconds=index * size)).isoformat(),
                "decode_tps": statistics.median(speeds) if speeds else None,
                "acceptance": _acceptance(bucket), "n": len(bucket),
            })
        everything = [r for bucket in buckets.values() for r in bucket]
        result[output_type] = {
            "decode_tps": summarize(field(r, "decode_tps_client") for r in everything),
            "acceptance": _acceptance(everything), "n": len(everything), "points": points,
        }
    return result


def window_stats(records: Sequence[Any], start: datetime, end: datetime) -> dict[str, Any]:
    """Every figure of the page for the records that arrived from start to end."""
    inside = [r for r in records if start <= when(r) <= end]
    return {
        "start": start.isoformat(), "end": end.isoformat(),
        "bucket_s": bucket_seconds(int((end - start).total_seconds())),
        "requests": len(inside),
        "errors": errors(inside),
        "buckets": per_bucket(inside, start, end),
        "by_output_type": by_output_type(inside, start, end),
        "ttft": ttft_percentiles(inside),
        "new_input_share": new_input_share(inside),
        "generation_share": generation_share(inside),
    }
