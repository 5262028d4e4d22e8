"""The relay's batched writer: records wait in memory and a thread of their own stores them.

`put` is what the relay's sink calls for every request: it never blocks and never touches the
database, so a slow or restarting Postgres never holds a chunk up. A background thread takes
up to `batch` records at a time (or what came within `interval_s`), stores them with one
bulk insert, and then tells the machine's Traffic page (traffic.live).

A database error keeps the batch and retries it with backoff on a fresh connection, so an
outage loses nothing accepted; the records' unique `key` makes a retry whose first try did
commit store each record once. The buffer is bounded: when `bound` records already wait, a new
record is refused and counted as dropped. Dropping the new one, not the oldest, keeps the rule
"an accepted record is stored"; the page shows the dropped count next to the records.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from django.db import DatabaseError, DataError, IntegrityError, close_old_connections, connection, transaction

from engines.models import Machine
from traffic.live import broadcast_records
from traffic.models import TrafficRecord as TrafficRow
from traffic.relay.record import TrafficRecord
from traffic.rows import to_row
from traffic.serialize import record_json, with_steps

log = logging.getLogger(__name__)

__all__ = ["RecordWriter", "WriterCounters"]

# A record waits with the engine it was relayed to (resolved by the relay command).
Pending = tuple[TrafficRecord, int | None]
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.2, 5.0


@dataclass(frozen=True)
class WriterCounters:
    """What the writer has done: accepted by put, stored, waiting, dropped at the bound, and the
    database error it is retrying past ("" once a batch is stored again)."""

    accepted: int
    stored: int
    buffered: int
    dropped: int
    last_error: str


class RecordWriter:
    """Stores one machine's traffic records in batches, from a thread of its own (started at once).

    :param engine_id: called by `put` for the engine each record went to; it must not touch the
        database (the relay command returns the id it last resolved).
    """

    def __init__(
        self, machine: Machine, bound: int = 10_000, batch: int = 200, interval_s: float = 0.5,
        engine_id: Callable[[], int | None] = lambda: None,
    ) -> None:
        if bound < 1 or batch < 1:
            raise ValueError("bound and batch must be at least 1")
        self.machine_id: int = machine.pk
        self._bound, self._batch, self._interval_s = bound, batch, interval_s
        self._engine_id = engine_id
        self._queue: deque[Pending] = deque()
        self._in_flight = 0  # taken from the queue, not yet stored
        self._cond = threading.Condition()
        self._hurry = self._closing = False
        self._accepted = self._stored = self._dropped = 0
        self._last_error = ""
        name = f"traffic-writer-{self.machine_id}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, record: TrafficRecord) -> None:
        """Hand a record over; returns at once. Past the bound (or after close) it is dropped."""
        engine = self._engine_id()
        with self._cond:
            if self._closing or len(self._queue) + self._in_flight >= self._bound:
                self._dropped += 1
                return
            self._queue.append((record, engine))
            self._accepted += 1
            if len(self._queue) in (1, self._batch):  # the first starts the interval's clock
                self._cond.notify_all()

    def counters(self) -> WriterCounters:
        """The writer's counters now."""
        with self._cond:
            return WriterCounters(self._accepted, self._stored, len(self._queue) + self._in_flight,
                                  self._dropped, self._last_error)

    def flush(self, timeout: float) -> bool:
        """Store what waits now, without waiting for a full batch; False if not all stored in time."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._hurry = True
            self._cond.notify_all()
            while self._queue or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float) -> bool:
        """Refuse new records, store the rest and stop; False if some were still unstored at `timeout`
        (a database still down: the thread keeps trying until the process exits)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            while batch := self._take():
                self._store(batch)
        finally:
            connection.close()  # this thread's own connection

    def _take(self) -> list[Pending]:
        """The next batch: full, or what waited `interval_s`, or the rest when flushing or closing."""
        deadline: float | None = None
        with self._cond:
            while len(self._queue) < self._batch and not ((self._hurry or self._closing) and self._queue):
                if self._closing:
                    return []
                if not self._queue:
                    self._hurry, deadline = False, None
                    self._cond.wait()
                    continue
                deadline = deadline or time.monotonic() + self._interval_s
                if (left := deadline - time.monotonic()) <= 0:
                    break
                self._cond.wait(left)
            batch = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
            self._in_flight = len(batch)
            return batch

    def _store(self, batch: list[Pending]) -> None:
        """Store the batch, retrying past database errors; then count it and tell the page."""
        rows = self._store_retrying(batch)
        with self._cond:
            self._stored += len(rows)
            self._dropped += len(batch) - len(rows)
            self._in_flight = 0
            self._cond.notify_all()
        broadcast_records(self.machine_id, [record_json(row) for row in rows])

    def _store_retrying(self, batch: list[Pending]) -> list[TrafficRow]:
        backoff, one_by_one = FIRST_BACKOFF_S, False
        while True:
            try:
                close_old_connections()
                rows = self._insert_each(batch) if one_by_one else _insert(self.machine_id, batch)
            except (DataError, IntegrityError) as exc:
                # Not an outage: a record the database refuses (its engine deleted meanwhile, say).
                self._note_error(exc)
                one_by_one = True
                continue
            except DatabaseError as exc:
                self._note_error(exc)
                with suppress(DatabaseError):
                    connection.close()  # a restarted Postgres left it dead: the next try reconnects
                time.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            if not one_by_one:  # else the refused record's error stays shown
                with self._cond:
                    self._last_error = ""
            return rows

    def _insert_each(self, batch: Sequence[Pending]) -> list[TrafficRow]:
        """The batch record by record: one the database refuses is left out (counted as dropped)."""
        stored: list[TrafficRow] = []
        for pending in batch:
            try:
                stored += _insert(self.machine_id, [pending])
            except (DataError, IntegrityError) as exc:
                self._note_error(exc)
                log.error("traffic record %s not stored: %s", pending[0].key, exc)
        return stored

    def _note_error(self, exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}".strip()
        with self._cond:
            self._last_error = text
        log.warning("traffic writer for machine %s: %s", self.machine_id, text)


def _insert(machine_id: int, batch: Sequence[Pending]) -> list[TrafficRow]:
    """One bulk insert; records a committed earlier try stored are skipped. Returns the batch's rows."""
    rows = [to_row(machine_id, record, engine) for record, engine in batch]
    with transaction.atomic():
        TrafficRow.objects.bulk_create(rows, ignore_conflicts=True)
    # bulk_create with ignore_conflicts sets no ids: read the rows back for the page.
    stored = with_steps(TrafficRow.objects.filter(key__in=[row.key for row in rows]))
    return list(stored.order_by("arrived", "pk"))
