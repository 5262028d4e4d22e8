"""The run's guard: its own heartbeat, or the recorder's when one was written within the interval."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from runs.models import Run
from runs.worker.guard import RunGuard
from runs.worker.recorder import RunCancelled, RunRecorder
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)

INTERVAL_S = 0.05
LONG_AGO = timezone.now() - timedelta(hours=1)


class Beats:
    """A recorder's recent heartbeats: the status each read back, at the time it was written."""

    def __init__(self, status: str | None) -> None:
        self.status = status
        self.asked = 0

    def status_since(self, t: float) -> str | None:
        self.asked += 1
        return self.status


@pytest.fixture
def run() -> Run:
    return RunFactory(status=Run.Status.RUNNING, heartbeat=LONG_AGO)


def _close_connection() -> None:
    connection.close()


@pytest.fixture(autouse=True)
async def _orm_connection_closed_after() -> AsyncIterator[None]:
    yield  # the async ORM's connection, on asgiref's sync thread, closed there
    await sync_to_async(_close_connection)()


async def test_it_beats_the_heartbeat_itself_when_no_recorder_beat_it(run: Run) -> None:
    beats = Beats(None)
    assert await RunGuard(run.pk, INTERVAL_S, beats).run(asyncio.sleep(INTERVAL_S * 4, "done")) == "done"
    assert beats.asked >= 2
    assert (await Run.objects.aget(pk=run.pk)).heartbeat > LONG_AGO


async def test_it_writes_no_second_heartbeat_where_the_recorder_beat_within_the_interval(run: Run) -> None:
    beats = Beats(Run.Status.RUNNING)
    assert await RunGuard(run.pk, INTERVAL_S, beats).run(asyncio.sleep(INTERVAL_S * 4, "done")) == "done"
    assert beats.asked >= 2
    assert (await Run.objects.aget(pk=run.pk)).heartbeat == LONG_AGO


async def test_it_stops_the_job_when_the_recorder_read_back_a_cancelled_run(run: Run) -> None:
    started = time.monotonic()
    with pytest.raises(RunCancelled, match="cancelled"):
        await RunGuard(run.pk, INTERVAL_S, Beats(Run.Status.CANCELLED)).run(asyncio.sleep(30))
    assert time.monotonic() - started < 5


async def test_it_stops_the_job_when_its_own_heartbeat_finds_the_run_cancelled(run: Run) -> None:
    await Run.objects.filter(pk=run.pk).aupdate(status=Run.Status.CANCELLED)
    with pytest.raises(RunCancelled, match="cancelled"):
        await RunGuard(run.pk, INTERVAL_S).run(asyncio.sleep(30))


async def test_it_learns_the_status_a_recorders_pass_read_back_after_its_heartbeat(run: Run) -> None:
    recorder = RunRecorder(run.pk, flush_interval_s=60)
    before = time.monotonic()
    assert recorder.status_since(before) is None
    await recorder.flush()
    assert recorder.status_since(before) == Run.Status.RUNNING
    assert recorder.status_since(time.monotonic()) is None  # nothing written since
    await Run.objects.filter(pk=run.pk).aupdate(status=Run.Status.CANCELLED)
    with pytest.raises(RunCancelled):
        await recorder.flush()
    assert recorder.status_since(before) == Run.Status.CANCELLED
    with pytest.raises(RunCancelled):  # as the worker's last flush of a cancelled run
        await recorder.close()
