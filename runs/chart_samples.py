"""The samples a run page's charts need: a long run's per-request series thinned to ~2,000 points.

GET /api/runs/<id>/samples?after=SEQ&max_points=N (what run_detail.js asks) reads only the
charted fields of every sample after SEQ, keeps each bucket's min and max of every field
(runs.core.downsample) and sends those samples with just their charted fields (no sample is
decoded in full). The last sample is always kept, so the page's "after" paging ends as it
would with every sample. Samples of other kinds (an engine's startup time, ...) are always
kept whole; jobs whose charts are not one point per sample (medians per level or per
length) are never thinned.
"""
from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models.fields.json import KeyTextTransform

from runs.core.downsample import keep
from runs.models import Run, Sample

# Per job: the fields its run page charts one point per "request" sample of.
CHARTED: dict[str, tuple[str, ...]] = {
    Run.Job.SPEED: ("decode_tps_client", "decode_tps_engine", "ttft_s", "acceptance_rate"),
}
CHART_KIND = "request"
MIN_POINTS, MAX_POINTS = 100, 5000


def chart_samples(run: Run, after: int, max_points: int) -> list[dict[str, Any]] | None:
    """The samples after `after`, at most ~max_points; None when there is nothing to thin (page
    as usual). A thinned "request" sample holds only the charted fields in its values, and "n":
    its number among the run's requests."""
    fields = CHARTED.get(run.job)
    if fields is None:
        return None
    max_points = min(max(max_points, MIN_POINTS), MAX_POINTS)
    series = _series(run, after, fields)
    others = [row[0] for row in series if row[2] != CHART_KIND]
    charted = [row for row in series if row[2] == CHART_KIND]
    if len(series) <= max_points or len(others) >= max_points // 2:
        return None
    picks = keep([row[3:] for row in charted], max_points - len(others))
    before = 0 if after < 0 else Sample.objects.filter(run=run, seq__lte=after, kind=CHART_KIND).count()
    thinned = [_chart_point(charted[p], fields, before + p + 1) for p in picks]
    full = [s.to_dict() for s in Sample.objects.filter(run=run, seq__in=others)] if others else []
    return sorted(full + thinned, key=lambda sample: sample["seq"])


def _chart_point(row: tuple[Any, ...], fields: tuple[str, ...], number: int) -> dict[str, Any]:
    seq, t, kind, *values = row
    return {"seq": seq, "t": t, "kind": kind, "values": dict(zip(fields, values, strict=True)), "n": number}


def _series(run: Run, after: int, fields: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """(seq, t, kind, *charted fields as floats or None) of every sample after `after`, in order."""
    values = (KeyTextTransform(field, "values") for field in fields)
    after_rows = Sample.objects.filter(run=run, seq__gt=after).order_by("seq")
    sql, params = after_rows.values_list("seq", "t", "kind", *values).query.sql_with_params()
    # A bare cursor: Django's per-value converters would cost more than the query itself for
    # a 10,000-sample run. The fields come as text (Postgres ->>, no JSON decoding of each
    # value) or as SQL values (SQLite); _number makes floats of both.
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(seq, t, kind, *map(_number, rest)) for seq, t, kind, *rest in cursor.fetchall()]


def _number(value: Any) -> float | None:
    """A charted value as a float; None when absent, null, or not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
