"""The recorder's two statements, on whichever database the suite runs on: they store what the
ORM would, and keep its rules (a stored sample is never written over; only a running run beats)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Run, Sample
from runs.worker.statements import beat_running, insert_samples
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db


def sample(run: Run, seq: int, values: dict) -> Sample:
    return Sample(run_id=run.pk, seq=seq, t=seq / 10, kind="request", values=values)


def test_it_inserts_samples_as_the_orm_reads_them_back_and_never_writes_over_one():
    run = RunFactory(status=Run.Status.RUNNING)
    first = {"ttft_s": 0.25, "text": "héllo \"quoted\"", "nested": {"tokens": [1, 2]}, "none": None}
    insert_samples([sample(run, 0, first), sample(run, 1, {"ttft_s": 0.5})])
    insert_samples([sample(run, 1, {"ttft_s": 9.0}), sample(run, 2, {"ttft_s": 0.75})])
    insert_samples([])
    stored = list(Sample.objects.filter(run=run).order_by("seq").values_list("seq", "t", "kind", "values"))
    assert stored == [
        (0, 0.0, "request", first),
        (1, 0.1, "request", {"ttft_s": 0.5}),
        (2, 0.2, "request", {"ttft_s": 0.75}),
    ]


def test_it_beats_a_running_run_and_leaves_an_ended_one_as_it_is():
    long_ago = timezone.now() - timedelta(hours=1)
    running = RunFactory(status=Run.Status.RUNNING, heartbeat=long_ago, progress_done=0)
    ended = RunFactory(status=Run.Status.CANCELLED, heartbeat=long_ago, progress_done=3)
    assert beat_running(running.pk, 5) is True
    assert beat_running(ended.pk, 7) is False
    running.refresh_from_db()
    ended.refresh_from_db()
    assert running.progress_done == 5 and running.heartbeat > long_ago + timedelta(minutes=59)
    assert (ended.progress_done, ended.heartbeat) == (3, long_ago)
