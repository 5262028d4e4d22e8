"""The two statements a recorder's pass runs, written once per database vendor, not built by the ORM.

A pass runs up to four times a second for the whole of a run: it inserts the samples since the
last one and beats the run's heartbeat with its progress. Built through the ORM (a queryset
cloned, filtered and compiled each time) those two took two thirds of a pass's CPU on the drain
thread (issue 41: 0.30 and 0.46 of 1.06 ms on SQLite). Here each is one SQL text, quoted by the
connection's own operations and kept per vendor, with its values adapted as the ORM adapts them.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection
from django.db.models.constants import OnConflict
from django.utils import timezone

from runs.models import Run, Sample

__all__ = ["beat_running", "insert_samples"]

_SAMPLE_FIELDS = ("run_id", "seq", "t", "kind", "values")


def beat_running(run_id: int, done: int) -> bool:
    """The run's heartbeat and progress `done`, stored only while it is running (Run.objects.beat's
    running_only); False when it is not running any more."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(_beat_sql(connection.vendor), [now, done, run_id, Run.Status.RUNNING.value])
        return cursor.rowcount == 1


def insert_samples(batch: list[Sample]) -> None:
    """Insert `batch`; a sample whose (run, seq) is already stored is left as it is (a batch written
    again after a lost connection)."""
    if not batch:
        return
    values = Sample._meta.get_field("values")
    rows = [(s.run_id, s.seq, s.t, s.kind, values.get_db_prep_save(s.values, connection)) for s in batch]
    with connection.cursor() as cursor:
        cursor.executemany(_insert_sql(connection.vendor), rows)


@cache
def _beat_sql(vendor: str) -> str:
    quote = connection.ops.quote_name
    column = _columns(Run)
    return (
        f"UPDATE {quote(Run._meta.db_table)} SET {column['heartbeat']} = %s, {column['progress_done']} = %s"
        f" WHERE {column['id']} = %s AND {column['status']} = %s"
    )


@cache
def _insert_sql(vendor: str) -> str:
    ops, column = connection.ops, _columns(Sample)
    fields = [Sample._meta.get_field(name.removesuffix("_id")) for name in _SAMPLE_FIELDS]
    suffix = ops.on_conflict_suffix_sql(fields, OnConflict.IGNORE, None, None)
    return (
        f"{ops.insert_statement(on_conflict=OnConflict.IGNORE)} {ops.quote_name(Sample._meta.db_table)}"
        f" ({', '.join(column[name] for name in _SAMPLE_FIELDS)}) VALUES ({', '.join(['%s'] * len(fields))})"
        f" {suffix}"
    ).rstrip()


def _columns(model: Any) -> dict[str, str]:
    """Each concrete field's quoted column, under its name and its attname (run and run_id)."""
    quote = connection.ops.quote_name
    found = {}
    for field in model._meta.concrete_fields:
        found[field.name] = found[field.attname] = quote(field.column)
    return found
