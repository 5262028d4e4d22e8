"""The samples a run page's charts need: a long run's per-request series thinned to ~2,000 points.

GET /api/runs/<id>/samples?after=SEQ&max_points=N (what run_detail.js asks) reads only the
charted fields of every sample after SEQ, keeps each bucket's min and max of every field
(runs.core.downsample), then loads those samples in full. The last sample is always kept, so
the page's "after" paging ends as it would with every sample. Samples of other kinds (an
engine's startup time, ...) are always kept; jobs whose charts are not one point per sample
(medians per level or per length) are never thinned.
"""
from __future__ import annotations

from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import FloatField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from runs.core.downsample import keep
from runs.models import Run, Sample

# Per job: the fields its run page charts one point per "request" sample of.
CHARTED = {Run.Job.SPEED: ("decode_tps_client", "decode_tps_engine", "ttft_s", "acceptance_rate")}
CHART_KIND = "request"
MIN_POINTS, MAX_POINTS = 100, 5000


def chart_samples(run: Run, after: int, max_points: int) -> list[dict[str, Any]] | None:
    """The samples after `after`, at most ~max_points, each thinned "request" sample with "n"
    (its number among the run's requests); None when there is nothing to thin (page as usual)."""
    fields = CHARTED.get(run.job)
    if fields is None:
        return None
    max_points = min(max(max_points, MIN_POINTS), MAX_POINTS)
    try:
        series = _series(run, after, fields)
    except DatabaseError:  # a charted field that is not a number: send every sample instead
        return None
    others = [row[0] for row in series if row[1] != CHART_KIND]
    charted = [row for row in series if row[1] == CHART_KIND]
    if len(series) <= max_points or len(others) >= max_points // 2:
        return None
    picks = keep([row[2:] for row in charted], max_points - len(others))
    before = 0 if after < 0 else Sample.objects.filter(run=run, seq__lte=after, kind=CHART_KIND).count()
    numbers = {charted[p][0]: before + p + 1 for p in picks}
    rows = Sample.objects.filter(run=run, seq__in=sorted([*others, *numbers])).order_by("seq")
    return [s.to_dict() | ({"n": numbers[s.seq]} if s.seq in numbers else {}) for s in rows]


def _series(run: Run, after: int, fields: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """(seq, kind, *charted fields as floats) of every sample after `after`, read in the database."""
    numbers = (Cast(KeyTextTransform(field, "values"), FloatField()) for field in fields)
    rows = Sample.objects.filter(run=run, seq__gt=after).order_by("seq").values_list("seq", "kind", *numbers)
    # Read with a bare cursor: the database already gives floats, and Django's per-value
    # converters would cost more than the query for a 10,000-sample run.
    sql, params = rows.query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:  # a failed cast is rolled back alone
        cursor.execute(sql, params)
        return cursor.fetchall()
