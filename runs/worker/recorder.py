"""The Django side of a job's progress: samples stored in batches, then broadcast, throttled,
on a drain thread of their own (runs.worker.handoff), never on the loop that reads the streams.
A pass stores on that thread itself, between turns of its loop, with its own database connection.

A database that goes away for a while (a Postgres restart) loses no sample: a batch that could
not be stored stays pending and is written again, under the unique (run, seq) key, once the
database answers; the job goes on measuring meanwhile.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError, close_old_connections, connections, transaction
from django.db.models import Max

from measure.client_health import ClientHealth
from runs.core.energy import WINDOW_FIELDS
from runs.live.broadcast import HOP_TIMEOUT_S, broadcast
from runs.models import Run, Sample
from runs.worker import handoff
from runs.worker.handoff import DrainThread, LiveUpdate, LiveUpdates
from runs.worker.statements import beat_running, insert_samples

log = logging.getLogger(__name__)
T = TypeVar("T")

# The samples that count as one unit of a run's progress (a request, a probe step, a question).
PROGRESS_SAMPLE_TYPES = ("request", "step", "question")
# How long a run waits for its database to come back (a restart takes seconds) before failing.
DB_OUTAGE_LIMIT_S = 60.0
# What an unreachable, restarting or just-restarted database raises.
DB_DOWN_ERRORS = (OperationalError, InterfaceError)
_FIRST_RETRY_S, _MAX_RETRY_S = 0.1, 2.0
# What a run's row changes while it runs (its config, engine, machine and revision never do).
RUNNING_FIELDS = ("status", "progress_done", "progress_total", "summary", "provenance", "error", "warnings",
                  "started", "finished", "heartbeat")
# While the run is still running, a pass reads its row back at most this often: its status change
# shows in the heartbeat's update at once, and what else changes beside the recorder (provenance,
# warnings) within this long on the live page. Each read was two fifths of the database thread's
# CPU per pass (issue 41's profile).
ROW_REREAD_S = 2.0
# With readings to store (telemetry), a pass runs at least this often, so they show live while a
# long request sends no sample.
QUIET_PASS_S = 1.0
ReadingsDrain = Callable[[], list[dict[str, Any]]]


class RunCancelled(Exception):
    """The run was cancelled by a user; the job stops at the next flush."""


async def reset_connection() -> None:
    """Drop the async ORM's connection if it broke, so the next query opens a fresh one.

    The async ORM runs on asgiref's shared sync thread; closing has to happen there.
    """
    await sync_to_async(close_old_connections)()


async def retry_db(call: Callable[[], Awaitable[T]], what: str, limit_s: float = DB_OUTAGE_LIMIT_S) -> T:
    """Await `call()`, retrying with backoff while the database is down, for up to `limit_s`.

    `call` must be safe to repeat: a write may have committed just before the connection broke.
    """
    deadline, delay = time.monotonic() + limit_s, _FIRST_RETRY_S
    while True:
        try:
            return await call()
        except DB_DOWN_ERRORS as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("%s: database unavailable (%s); retrying in %.1f s", what, _first_line(exc), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_RETRY_S)
            await reset_connection()


class RunRecorder:
    """Implements the core's RunProgress: buffers samples; a drain thread stores and broadcasts them.

    The job's loop only appends (runs.worker.handoff): a pass on the drain thread, woken at most
    once per flush interval, writes the pending samples (passes run one at a time, as plain calls
    on that thread), then offers them to the run's watchers,
    so a browser that joins late finds in the database every sample it did not receive live. A
    cancellation, or a database outage past its limit, that a pass finds is raised to the job at
    its next sample or flush.
    """

    def __init__(self, run_id: int, flush_interval_s: float = 0.25, live_bound: int | None = None) -> None:
        self.run_id = run_id
        self.flush_interval_s = flush_interval_s
        self.started = time.monotonic()
        self.started_perf = time.perf_counter()  # the engine clients' clock (requests' sent_at)
        self.pending: list[Sample] = []  # appended on the job's loop, emptied by the drain thread
        self.next_seq = 0
        self.done = 0
        self.last_flush = 0.0
        self.db_down_since: float | None = None
        self.request_rows: list[dict[str, Any]] = []  # each request's window, for its energy
        self.summary_so_far: dict[str, Any] | None = None  # sent with the run until its end, never stored
        # The run's client health: live updates coalesced in the hand-off are counted here.
        self.health = ClientHealth()
        self._lock = threading.Lock()  # guards `pending` between the two threads
        # The drain thread's database connection is its own: closed when the thread ends.
        self._drain = DrainThread(f"run-{run_id}-recorder", on_exit=connections.close_all)
        bound = live_bound or handoff.LIVE_UPDATES_BOUND
        self._live = LiveUpdates(self._send_live, self.health.thinned, bound)
        self._serving = False  # the live updates' sender runs on the drain loop from the first pass
        self._woken: concurrent.futures.Future[None] | None = None
        self._cancelled = False
        self._failed: BaseException | None = None
        self._run: Run | None = None  # loaded on the drain thread's first pass
        self._read_at = 0.0  # when a pass last read the run's row back
        self._reread = False  # the next pass reads the row back whatever its age (the last one)
        self._passed_at = 0.0  # when the last pass began
        self._readings: tuple[ReadingsDrain, str] | None = None
        self._quiet: concurrent.futures.Future[None] | None = None
        # (when a pass wrote the heartbeat, the status it read back): written by the drain thread,
        # read by the run's guard on the job's loop; one tuple, replaced whole
        self._beat: tuple[float, str] | None = None
        try:  # the job's loop, where the async ORM's connection is renewed after an outage
            self._job_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._job_loop = None

    async def open(self) -> None:
        """Continue numbering after any samples a previous delivery of this run stored."""
        last = await retry_db(
            lambda: Sample.objects.filter(run_id=self.run_id).aaggregate(m=Max("seq")), f"run {self.run_id}"
        )
        self.next_seq = 0 if last["m"] is None else last["m"] + 1

    async def on_start(self, total: int) -> None:
        what = f"run {self.run_id}"
        await retry_db(lambda: Run.objects.abeat(self.run_id, running_only=False, progress_total=total), what)
        self._read_at = 0.0  # the next pass reads the total back
        await self.flush()

    async def on_sample(self, sample_type: str, values: dict[str, Any]) -> None:
        t = time.monotonic() - self.started
        if "sent_at" in values:  # the client's clock: stored as seconds since the run started
            sent = values["sent_at"]
            values = {k: v for k, v in values.items() if k != "sent_at"}
            values["start_t"] = round(sent - self.started_perf, 6)
        if sample_type == "request":
            self.request_rows.append({k: values.get(k) for k in WINDOW_FIELDS})
        self._append(sample_type, t, values)
        if sample_type in PROGRESS_SAMPLE_TYPES:
            self.done += 1
        self._raise_noted()
        if time.monotonic() - self.last_flush >= self.flush_interval_s:
            self._wake()

    async def on_summary_so_far(self, summary: dict[str, Any]) -> None:
        self.summary_so_far = summary

    def add_readings(self, sample_type: str, readings: list[dict[str, Any]]) -> None:
        """Samples stamped with their own run time (a reading's "t"), stored at the next flush."""
        for reading in readings:
            self._append(sample_type, reading["t"], {k: v for k, v in reading.items() if k != "t"})

    def take_readings(self, drain: ReadingsDrain | None, sample_type: str = "telemetry") -> None:
        """From now on each pass, on the drain thread, stores what `drain()` returns (a sampler's new
        readings) as samples of `sample_type`, and a pass runs at least every QUIET_PASS_S; None
        stops it. The measuring loop never touches the readings."""
        self._readings = (drain, sample_type) if drain is not None else None
        if drain is not None and self._quiet is None:
            self._quiet = self._drain.submit(self._quiet_passes())

    async def _quiet_passes(self) -> None:
        while self._readings is not None:
            await asyncio.sleep(QUIET_PASS_S)
            if time.monotonic() - self._passed_at >= QUIET_PASS_S:
                await asyncio.wrap_future(self._drain.call(self._pass))

    def _append(self, sample_type: str, t: float, values: dict[str, Any]) -> None:
        # Both threads append (the job's samples, the drain's readings): seq is taken under the lock.
        with self._lock:
            sample = Sample(run_id=self.run_id, seq=self.next_seq, t=t, kind=sample_type, values=values)
            self.pending.append(sample)
            self.next_seq += 1

    def _wake(self) -> None:
        """Start a pass on the drain thread unless one is under way; returns at once."""
        self.last_flush = time.monotonic()
        if self._woken is None or self._woken.done():
            self._woken = self._drain.call(self._pass)

    def status_since(self, t: float) -> str | None:
        """The run's status as a pass read it back after writing the heartbeat at monotonic time `t`
        or later; None when no pass did (runs.worker.guard.RecentBeats)."""
        beat = self._beat
        return beat[1] if beat is not None and beat[0] >= t else None

    def _raise_noted(self) -> None:
        if self._failed is not None:
            raise self._failed
        if self._cancelled:
            raise RunCancelled

    async def flush(self) -> None:
        """Store pending samples, refresh progress and heartbeat, offer them live; stop if cancelled.

        Awaits the pass on the drain thread. While the database is down the samples stay pending
        and the job goes on; after DB_OUTAGE_LIMIT_S of failed passes the error is raised.
        """
        self.last_flush = time.monotonic()
        await asyncio.wrap_future(self._drain.call(self._pass))
        self._raise_noted()

    def _pass(self) -> None:
        """One pass, on the drain thread with its loop stopped (the job's flushes, its wake-ups and
        quiet passes, one at a time)."""
        if not self._serving:  # first pass: the live updates' sender starts with the loop's next turn
            self._serving = True
            self._drain.loop.create_task(self._live.serve())
        self._passed_at = time.monotonic()
        self._failed = None  # a pass that stores again ends the outage the job was told of
        try:
            self._flush_pending()
        except Exception as exc:  # the outage limit: surfaced to the job
            self._failed = exc

    def _flush_pending(self) -> None:
        if self._readings is not None:
            drain, sample_type = self._readings
            self.add_readings(sample_type, drain())
        with self._lock:
            batch = list(self.pending)
        beat_at = time.monotonic()
        try:
            run = self._store_now(batch)
        except DB_DOWN_ERRORS as exc:
            self._note_outage(exc, len(batch))
            return
        self._beat = (beat_at, run.status)
        if self.db_down_since is not None:
            down_s = time.monotonic() - self.db_down_since
            log.warning("run %s: database back after %.1f s", self.run_id, down_s)
            self.db_down_since = None
        with self._lock:
            del self.pending[: len(batch)]
        self._offer(batch, run)

    async def close(self) -> None:
        """The last flush: retried until everything pending is stored, or the outage limit passes;
        then the last live updates are sent and the drain thread ends."""
        self._reread = True  # the last live update shows the row as stored now
        try:
            await retry_db(self._flush_or_raise, f"run {self.run_id} final flush")
        finally:
            await asyncio.wrap_future(self._drain.submit(self._live.drained(handoff_wait_s())))
            await asyncio.to_thread(self._drain.stop)

    async def _flush_or_raise(self) -> None:
        await self.flush()
        if self.db_down_since is not None:
            raise OperationalError(f"{len(self.pending)} samples still unstored")

    def _store_now(self, batch: list[Sample]) -> Run:
        """The batch, the heartbeat and the progress in one transaction, then the run as `_row`
        has it."""
        done = self.done  # the job's loop counts on meanwhile
        with transaction.atomic():
            insert_samples(batch)  # again after a lost connection: only the rows not yet stored
            running = beat_running(self.run_id, done)
            if not running:  # stopped meanwhile: its progress still counts the samples stored
                Run.objects.beat(self.run_id, running_only=False, progress_done=done)
        return self._row(done, reread=not running)

    def _row(self, done: int, reread: bool) -> Run:
        """The run: loaded with its config, engine and machine once, then the fields a run changes
        while it runs read again when it stopped running, at the last pass, or ROW_REREAD_S after
        the previous read; in between, the progress this pass stored (a fifth of the worker's cost
        beyond the measuring loop was loading it whole at every pass: issue 41's profile)."""
        now = time.monotonic()
        if self._run is None:
            self._run = run_with_relations(self.run_id)
        elif reread or self._reread or now - self._read_at >= ROW_REREAD_S:
            self._run.refresh_from_db(fields=RUNNING_FIELDS)
        else:
            self._run.progress_done = done
            return self._run
        self._read_at = now
        return self._run

    def _note_outage(self, exc: Exception, pending: int) -> None:
        now = time.monotonic()
        if self.db_down_since is None:
            self.db_down_since = now
            log.warning("run %s: database unavailable (%s); %d samples kept to retry", self.run_id,
                        _first_line(exc), pending)
            self._renew_job_connection()
        elif now - self.db_down_since > DB_OUTAGE_LIMIT_S:
            raise exc
        close_old_connections()  # the drain thread's own: a broken one is not reused

    def _renew_job_connection(self) -> None:
        """Close the async ORM's connection too, from the job's loop, once an outage begins. What
        ended the drain thread's connection (a Postgres restart) ended that one, and while the
        passes store, the guard reads their heartbeat instead of beating: nothing on the job's side
        would meet the error before its next write (provenance, the engine's session) failed the
        run. Once closed, it reconnects at its next query (or health-checks, with CONN_MAX_AGE)."""
        if self._job_loop is not None and not self._job_loop.is_closed():
            asyncio.run_coroutine_threadsafe(reset_connection(), self._job_loop)

    def _offer(self, batch: list[Sample], run: Run) -> None:
        shape: dict[str, Any] = dict(run.to_dict())
        if self.summary_so_far is not None and not run.summary:
            shape["summary_so_far"] = self.summary_so_far
        self._live.offer(LiveUpdate([s.to_dict() for s in batch], shape))
        if run.status == Run.Status.CANCELLED:
            self._cancelled = True

    async def _send_live(self, update: LiveUpdate) -> None:
        if update.samples:
            await broadcast(self.run_id, {"type": "samples", "samples": update.samples})
        await broadcast(self.run_id, {"type": "run", "run": update.run})


def handoff_wait_s() -> float:
    """How long the last live updates may take to go out before the run ends without them."""
    return HOP_TIMEOUT_S * 2


def run_with_relations(run_id: int) -> Run:
    """The run with what its `to_dict` reads: config, engine, machine and revision."""
    return Run.objects.select_related("config__engine", "machine", "revision").get(pk=run_id)


async def load_run(run_id: int) -> Run:
    return await sync_to_async(run_with_relations)(run_id)


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
