"""The hand-off between the measuring loop and the recording: a sample returns at once, however
slow the database; a full hand-off thins live updates (counted, with the client-bound warning)
and never drops a sample."""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvloop

from runs.models import Run, Sample
from runs.worker import recorder as recorder_module
from runs.worker.client_health import client_bound_warning, with_client_health
from runs.worker.handoff import DrainThread, LiveUpdate, LiveUpdates
from runs.worker.recorder import RunRecorder
from tests.factories import RunFactory
from tests.runs.worker.test_recorder import drop_orm_connection, stored_seqs

pytestmark = pytest.mark.django_db(transaction=True)

VALUES = {"ttft_s": 0.2, "decode_tps_client": 40.0}


@pytest.fixture
def run() -> Run:
    return RunFactory(status=Run.Status.RUNNING)


@pytest.fixture(autouse=True)
async def _orm_connection_closed_after() -> AsyncIterator[None]:
    yield
    await drop_orm_connection()


async def test_it_stores_every_sample_and_counts_thinned_updates_when_the_hand_off_is_full(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict[str, Any]] = []

    async def slow_broadcast(run_id: int, message: dict[str, Any]) -> None:
        await asyncio.sleep(0.05)  # a channel layer that keeps up with a few messages a second
        sent.append(message)

    monkeypatch.setattr(recorder_module, "broadcast", slow_broadcast)
    recorder = RunRecorder(run.pk, flush_interval_s=0, live_bound=1)

    async def job() -> dict[str, Any]:
        for i in range(80):
            await recorder.on_sample("request", VALUES | {"i": i})
            await asyncio.sleep(0.003)
        await recorder.close()
        return {}

    summary = await with_client_health(job(), recorder.health)
    assert await stored_seqs(run.pk) == list(range(80))
    assert summary["client_health"]["live_updates_thinned"] > 0
    assert "thinned" in summary["client_health"]["reasons"]
    [bound] = client_bound_warning(summary)
    assert "live updates thinned" in bound["message"]
    # Thinned by coalescing: the watchers still got every sample, in fewer messages.
    live = [s["seq"] for m in sent if m["type"] == "samples" for s in m["samples"]]
    assert live == list(range(80))


async def test_it_returns_from_a_sample_without_waiting_for_the_database(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunRecorder._store_now

    def slow_store(self: RunRecorder, batch: list[Sample]) -> Run:
        time.sleep(0.3)
        return store(self, batch)

    monkeypatch.setattr(RunRecorder, "_store_now", slow_store)
    recorder = RunRecorder(run.pk, flush_interval_s=0)
    took = []
    for _ in range(5):
        start = time.perf_counter()
        await recorder.on_sample("request", VALUES)
        took.append(time.perf_counter() - start)
    assert max(took) < 0.05
    await recorder.close()
    assert await stored_seqs(run.pk) == [0, 1, 2, 3, 4]
    assert (await Run.objects.aget(pk=run.pk)).progress_done == 5


async def test_it_raises_a_cancellation_at_the_next_sample(run: Run) -> None:
    recorder = RunRecorder(run.pk, flush_interval_s=60)
    await Run.objects.filter(pk=run.pk).aupdate(status=Run.Status.CANCELLED)
    await recorder.on_sample("request", VALUES)
    with pytest.raises(recorder_module.RunCancelled):
        await recorder.flush()
    with pytest.raises(recorder_module.RunCancelled):
        await recorder.on_sample("request", VALUES)
    with pytest.raises(recorder_module.RunCancelled):
        await recorder.close()
    assert await stored_seqs(run.pk) == [0, 1]


async def test_it_folds_updates_into_the_newest_waiting_one_when_full() -> None:
    thinned: list[int] = []

    async def send(update: LiveUpdate) -> None:
        pass

    live = LiveUpdates(send, thinned.append, bound=1)
    for seq in range(3):
        live.offer(LiveUpdate([{"seq": seq}], {"n": seq}))
    [waiting] = live._waiting
    assert waiting.samples == [{"seq": 0}, {"seq": 1}, {"seq": 2}] and waiting.run == {"n": 2}
    assert thinned == [1, 1]


def test_it_drains_on_a_uvloop_of_its_own_thread():
    drain = DrainThread("test-drain")

    async def where() -> tuple[asyncio.AbstractEventLoop, str]:
        return asyncio.get_running_loop(), threading.current_thread().name

    try:
        loop, thread = drain.submit(where()).result(timeout=10)
    finally:
        drain.stop()
    assert isinstance(loop, uvloop.Loop) and thread == "test-drain"


def test_it_runs_calls_on_its_thread_with_no_loop_running_so_the_orm_is_allowed(run: Run):
    exited_on: list[str] = []
    drain = DrainThread("test-drain", on_exit=lambda: exited_on.append(threading.current_thread().name))

    def where() -> tuple[str, bool, int]:
        try:
            running = asyncio.get_running_loop() is not None
        except RuntimeError:
            running = False
        return threading.current_thread().name, running, Run.objects.filter(pk=run.pk).count()

    async def slow_sender() -> str:
        await asyncio.sleep(0.2)  # a live update in flight when the call comes
        return "sent"

    try:
        sending = drain.submit(slow_sender())
        time.sleep(0.05)
        assert drain.call(where).result(timeout=10) == ("test-drain", False, 1)
        assert sending.result(timeout=10) == "sent"  # the loop's coroutines go on after the call
        later = drain.call(lambda: "after")
    finally:
        drain.stop()
    assert later.result(timeout=0) == "after" and exited_on == ["test-drain"]


def test_it_hands_a_calls_exception_to_its_caller():
    drain = DrainThread("test-drain")

    def broken() -> None:
        raise ValueError("no")

    try:
        with pytest.raises(ValueError, match="no"):
            drain.call(broken).result(timeout=10)
        assert drain.call(lambda: 2).result(timeout=10) == 2
    finally:
        drain.stop()
