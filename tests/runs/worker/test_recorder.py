"""The recorder while its database is unreachable: samples kept, stored once it is back, no
duplicates; the last flush waits for the database; retries give up after their limit. And the
summary so far, sent with the run to its watchers until the final one is stored.

The outage is real, not mocked: the ORM's connection is closed and new ones go to a database
that is not there (a missing SQLite folder, or a Postgres port nothing listens on).
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import OperationalError, connection

from runs.live import broadcast as broadcast_module
from runs.live.broadcast import group_name
from runs.models import Run, Sample
from runs.worker import recorder as recorder_module
from runs.worker.recorder import RunRecorder, retry_db
from tests.factories import RunFactory
from tests.real_engine import free_port

pytestmark = pytest.mark.django_db(transaction=True)

VALUES = {"ttft_s": 0.2, "decode_tps_client": 40.0}
RunMessages = Callable[[], Awaitable[dict]]


@contextmanager
def database_down() -> Iterator[None]:
    """Until the block ends, every new connection fails as it would to a stopped database."""
    saved = dict(connection.settings_dict)
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-sparkdash-dir/db.sqlite3"
    else:
        # A port nothing listens on: connections are refused.
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))
    try:
        yield
    finally:
        connection.settings_dict.update(saved)


def _close_connection() -> None:
    connection.close()


async def drop_orm_connection() -> None:
    # The async ORM's connection lives on asgiref's sync thread: close it there.
    await sync_to_async(_close_connection)()


async def drop_connections(recorder: RunRecorder) -> None:
    """Close the async ORM's connection and the recorder's own, on its drain thread."""
    await drop_orm_connection()
    await asyncio.wrap_future(recorder._drain.call(_close_connection))


async def stored_seqs(run_id: int) -> list[int]:
    seqs = Sample.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True)
    return [s async for s in seqs]


@pytest.fixture
def run() -> Run:
    return RunFactory(status=Run.Status.RUNNING)


@pytest.fixture(autouse=True)
async def _orm_connection_closed_after() -> AsyncIterator[None]:
    # Else the test database cannot be dropped at the end (Postgres: "being accessed by other users").
    yield
    await drop_orm_connection()


async def test_it_keeps_samples_while_the_database_is_down_and_stores_them_once_back(run: Run) -> None:
    recorder = quiet_recorder(run.pk)
    await recorder.on_sample("request", VALUES)
    await recorder.flush()
    with database_down():
        await drop_connections(recorder)
        await recorder.on_sample("request", VALUES)
        await recorder.on_sample("request", VALUES)
        await recorder.flush()
        assert [s.seq for s in recorder.pending] == [1, 2]
    await recorder.on_sample("request", VALUES)
    await recorder.flush()
    assert recorder.pending == []
    await recorder.close()
    assert await stored_seqs(run.pk) == [0, 1, 2, 3]
    assert (await Run.objects.aget(pk=run.pk)).progress_done == 4


def quiet_recorder(run_id: int) -> RunRecorder:
    """A recorder that stores only when flushed (its first sample wakes no pass)."""
    recorder = RunRecorder(run_id, flush_interval_s=60)
    recorder.last_flush = time.monotonic()
    return recorder


async def test_it_stores_a_batch_again_without_duplicates(run: Run) -> None:
    recorder = quiet_recorder(run.pk)
    for _ in range(3):
        await recorder.on_sample("request", VALUES)
    # The batch got stored, but the answer was lost with the connection: the flush writes it again.
    copies = [Sample(run_id=run.pk, seq=s.seq, t=s.t, kind=s.kind) for s in recorder.pending]
    await Sample.objects.abulk_create(copies)
    await recorder.close()
    assert await stored_seqs(run.pk) == [0, 1, 2]


async def test_it_waits_for_the_database_before_the_last_flush_gives_up(run: Run) -> None:
    recorder = quiet_recorder(run.pk)
    await recorder.on_sample("request", VALUES)
    with database_down():
        await drop_connections(recorder)
        closing = asyncio.ensure_future(recorder.close())
        await asyncio.sleep(0.5)
        assert not closing.done()
    await asyncio.wait_for(closing, 10)
    assert await stored_seqs(run.pk) == [0]


async def test_it_gives_up_retrying_after_the_limit(run: Run) -> None:
    with database_down():
        await drop_orm_connection()
        with pytest.raises(OperationalError):
            update = Run.objects.filter(pk=run.pk)
            await retry_db(lambda: update.aupdate(progress_done=1), "test", limit_s=0.3)
    await drop_orm_connection()
    assert (await Run.objects.aget(pk=run.pk)).progress_done == 0


async def test_it_sends_the_summary_so_far_with_the_run_until_the_final_one_is_stored(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with run_messages(run.pk, monkeypatch) as next_run_message:
        recorder = RunRecorder(run.pk, flush_interval_s=0)
        so_far = {"requests": 1, "ttft_s": {"median": 0.2, "min": 0.2, "max": 0.2, "n": 1}}
        await recorder.on_summary_so_far(so_far)
        await recorder.on_sample("request", VALUES)
        running = await next_run_message()
        assert running["summary_so_far"] == so_far and running["summary"] == {}
        assert await Sample.objects.filter(run_id=run.pk).acount() == 1  # the summary so far is not stored
        await Run.objects.filter(pk=run.pk).aupdate(summary={"requests": 1})
        await recorder.close()
        ended = await next_run_message()
        assert "summary_so_far" not in ended and ended["summary"] == {"requests": 1}


@asynccontextmanager
async def run_messages(run_id: int, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunMessages]:
    """The run's live "run" messages, one per call, as a watcher of the run receives them."""
    # The recorder broadcasts from its drain thread: to this loop's queues as to a consumer's.
    monkeypatch.setattr(broadcast_module, "_consumer_loop", asyncio.get_running_loop())
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group_name(run_id), channel)
    try:
        yield lambda: _run_message(layer, channel)
    finally:
        await layer.group_discard(group_name(run_id), channel)


async def _run_message(layer, channel: str) -> dict:
    while True:
        message = (await asyncio.wait_for(layer.receive(channel), 5))["message"]
        if message["type"] == "run":
            return message["run"]


async def test_it_stores_readings_on_its_own_thread_while_the_job_sends_nothing(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder_module, "QUIET_PASS_S", 0.1)
    readings = [{"t": 0.1, "cpu_load": 0.5}, {"t": 0.2, "cpu_load": 0.6}]
    taken_on: list[str] = []

    def drain() -> list[dict]:
        taken_on.append(threading.current_thread().name)
        taken = list(readings)
        readings.clear()
        return taken

    recorder = quiet_recorder(run.pk)
    recorder.take_readings(drain)
    await recorder.on_sample("request", VALUES)  # no pass woken: the quiet passes store it
    for _ in range(50):
        if len(await stored_seqs(run.pk)) == 3:
            break
        await asyncio.sleep(0.05)
    stored = Sample.objects.filter(run_id=run.pk).order_by("seq").values_list("kind", flat=True)
    kinds = [kind async for kind in stored]
    assert kinds == ["request", "telemetry", "telemetry"]
    assert (await Run.objects.aget(pk=run.pk)).progress_done == 1
    assert set(taken_on) == {f"run-{run.pk}-recorder"}
    recorder.take_readings(None)
    await recorder.close()


async def test_it_sees_a_cancel_at_the_pass_after_it(run: Run) -> None:
    recorder = quiet_recorder(run.pk)
    await recorder.on_sample("request", VALUES)
    await recorder.flush()  # the row is loaded here; a pass within ROW_REREAD_S reads it back only if stopped
    await Run.objects.filter(pk=run.pk).aupdate(status=Run.Status.CANCELLED)
    await recorder.on_sample("request", VALUES)
    with pytest.raises(recorder_module.RunCancelled):
        await recorder.flush()
    assert recorder.status_since(0.0) == Run.Status.CANCELLED
    assert (await Run.objects.aget(pk=run.pk)).progress_done == 2
    with pytest.raises(recorder_module.RunCancelled):
        await recorder.close()


async def test_it_sends_the_row_as_stored_with_its_last_pass(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with run_messages(run.pk, monkeypatch) as next_run_message:
        recorder = quiet_recorder(run.pk)
        await recorder.on_sample("request", VALUES)
        await recorder.flush()
        assert (await next_run_message())["progress"]["done"] == 1
        await Run.objects.filter(pk=run.pk).aupdate(provenance={"engine": "written beside the recorder"})
        await recorder.on_sample("request", VALUES)
        await recorder.flush()  # within ROW_REREAD_S: the progress it stored, the rest as read before
        assert (await next_run_message())["progress"]["done"] == 2
        await recorder.close()
        last = await next_run_message()
    assert last["provenance"] == {"engine": "written beside the recorder"} and last["progress"]["done"] == 2


async def test_it_writes_to_the_embedded_database_through_a_write_ahead_log() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the embedded default's database only")

    def journal_mode() -> str:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            return cursor.fetchone()[0]

    assert await sync_to_async(journal_mode)() == "wal"


async def test_it_renews_the_job_sides_connection_when_its_pass_finds_the_database_gone(run: Run) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("Postgres: its connections can be ended from outside, as a restart ends them")
    recorder = quiet_recorder(run.pk)
    await recorder.on_sample("request", VALUES)
    await recorder.flush()  # the drain thread's connection, and the async ORM's below, are open
    assert await Run.objects.filter(pk=run.pk).aexists()
    job_side = await sync_to_async(_backend_pid)()
    pids = [job_side, await asyncio.wrap_future(recorder._drain.call(_backend_pid))]
    await asyncio.to_thread(_end_connections, pids)
    await recorder.on_sample("request", VALUES)
    await recorder.flush()  # the pass meets its ended connection: an outage, the samples kept
    await recorder.flush()  # and stores them through a new one
    await asyncio.sleep(0.2)
    # The job's side (provenance, the engine's session, the outcome) finds a working connection,
    # although nothing there met the error itself.
    assert await Run.objects.filter(pk=run.pk).aexists()
    await recorder.close()
    assert await stored_seqs(run.pk) == [0, 1]


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _end_connections(pids: list[int]) -> None:
    """What a Postgres restart does to the connections of `pids`, from a connection of its own."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s) AS pid", [pids])
    finally:
        connection.close()
