"""The samples a run page's charts need: a long run's series thinned to ~2,000 points.

GET /api/runs/<id>/samples?after=SEQ&max_points=N (what run_detail.js asks) reads only the
charted fields of every sample after SEQ, keeps each bucket's min and max of every field
(runs.core.downsample) and sends those samples with just their charted fields (no sample is
decoded in full). The last sample of each thinned sample type is always kept, so the page's "after"
paging ends as it would with every sample. Two sample types are thinned, each within its own share:
"request" samples (of jobs whose charts are one point per request) and "telemetry" samples
(10 Hz hardware readings, every job), whose phase changes and throttle span edges are always
kept so the page still shades each span. Samples of other types (an engine's startup time,
...) are always kept whole, and nothing is thinned when they are half the points or more.
"""
from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.db.models.fields.json import KeyTextTransform

from runs.core import registry
from runs.core.downsample import keep
from runs.models import Run, Sample

CHART_SAMPLE_TYPE = "request"
TELEMETRY_SAMPLE_TYPE = "telemetry"
# What the telemetry chart draws (static/js/telemetry.js); phase and throttle come as text.
TELEMETRY_FIELDS = ("cpu_load", "mem_used_bytes", "power_w", "sm_clock_mhz", "temperature_c")
TELEMETRY_MARKS = ("phase", "throttle")
MIN_POINTS, MAX_POINTS = 100, 5000


def chart_samples(run: Run, after: int, max_points: int) -> list[dict[str, Any]] | None:
    """The samples after `after`, at most ~max_points; None when there is nothing to thin (page
    as usual). A thinned "request" sample holds only the charted fields in its values, and "n":
    its number among the run's requests; a thinned "telemetry" sample holds the charted
    telemetry fields, its phase and its throttle list."""
    fields = registry.get(run.job).charted
    max_points = min(max(max_points, MIN_POINTS), MAX_POINTS)
    after_rows = Sample.objects.filter(run=run, seq__gt=after)
    if after_rows.count() <= max_points:
        return None
    thinned_types = [TELEMETRY_SAMPLE_TYPE] + ([CHART_SAMPLE_TYPE] if fields else [])
    others = list(after_rows.exclude(kind__in=thinned_types).values_list("seq", flat=True))
    if len(others) >= max_points // 2:
        return None
    charted = _series(run, after, CHART_SAMPLE_TYPE, fields) if fields else []
    telemetry = _series(run, after, TELEMETRY_SAMPLE_TYPE, TELEMETRY_FIELDS + TELEMETRY_MARKS)
    request_share, telemetry_share = _shares(max_points - len(others), len(charted), len(telemetry))
    full = [s.to_dict() for s in Sample.objects.filter(run=run, seq__in=others)] if others else []
    points = full + _requests(run, after, charted, fields, request_share)
    return sorted(points + _telemetry(telemetry, telemetry_share), key=lambda sample: sample["seq"])


def _shares(budget: int, requests: int, telemetry: int) -> tuple[int, int]:
    """(request, telemetry) points out of `budget`: half each, what one type leaves to the other."""
    telemetry_share = budget - min(requests, budget // 2)
    return budget - min(telemetry, telemetry_share), telemetry_share


def _requests(
    run: Run, after: int, charted: list[tuple[Any, ...]], fields: tuple[str, ...], share: int
) -> list[dict[str, Any]]:
    if not charted:
        return []
    numeric = [tuple(map(_number, row[3:])) for row in charted]
    earlier = Sample.objects.filter(run=run, seq__lte=after, kind=CHART_SAMPLE_TYPE)
    before = 0 if after < 0 else earlier.count()
    return [_request_point(charted[p], numeric[p], fields, before + p + 1) for p in keep(numeric, share)]


def _request_point(
    row: tuple[Any, ...], values: tuple[float | None, ...], fields: tuple[str, ...], number: int
) -> dict[str, Any]:
    seq, t, sample_type = row[:3]
    charted = dict(zip(fields, values, strict=True))
    return {"seq": seq, "t": t, "kind": sample_type, "values": charted, "n": number}


def _telemetry(rows: list[tuple[Any, ...]], share: int) -> list[dict[str, Any]]:
    """The telemetry samples to draw: min/max per bucket, plus every phase change and throttle edge."""
    if not rows:
        return []
    count = len(TELEMETRY_FIELDS)
    numeric = [tuple(map(_number, row[3 : 3 + count])) for row in rows]
    marks = [(row[3 + count], _reasons(row[4 + count])) for row in rows]
    picks = set(keep(numeric, share)) | _edges(marks)
    return [_telemetry_point(rows[p], numeric[p], marks[p]) for p in sorted(picks)]


def _edges(marks: list[tuple[Any, list[str]]]) -> set[int]:
    """Rows whose (phase, throttle reasons) differ from a neighbour's: where a span starts or ends."""
    edges: set[int] = set()
    for i in range(1, len(marks)):
        if marks[i] != marks[i - 1]:
            edges.update((i - 1, i))
    return edges


def _telemetry_point(
    row: tuple[Any, ...], values: tuple[float | None, ...], mark: tuple[Any, list[str]]
) -> dict[str, Any]:
    seq, t, sample_type = row[:3]
    charted = {f: v for f, v in zip(TELEMETRY_FIELDS, values, strict=True) if v is not None}
    shown = {**charted, "phase": mark[0], "throttle": mark[1]}
    return {"seq": seq, "t": t, "kind": sample_type, "values": shown}


def _reasons(value: Any) -> list[str]:
    """A stored throttle list (JSON text, or a list) as a list of reason names; [] when none."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [str(reason) for reason in value] if isinstance(value, list) else []


def _series(run: Run, after: int, sample_type: str, fields: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """(seq, t, sample type, *fields as stored text or SQL values) of the samples of `sample_type`
    after `after`, in order (the type is stored in the column "kind")."""
    values = (KeyTextTransform(field, "values") for field in fields)
    after_rows = Sample.objects.filter(run=run, seq__gt=after, kind=sample_type).order_by("seq")
    sql, params = after_rows.values_list("seq", "t", "kind", *values).query.sql_with_params()
    # A bare cursor: Django's per-value converters would cost more than the query itself for
    # a 10,000-sample run. The fields come as text (Postgres ->>, no JSON decoding of each
    # value) or as SQL values (SQLite); _number makes floats of both.
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]


def _number(value: Any) -> float | None:
    """A charted value as a float; None when absent, null, or not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
