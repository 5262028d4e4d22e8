"""The relay's heartbeat: the machine's "relay active" mark (which runs honour) and its relay state.

Every few seconds the relay command writes Machine.relay_heartbeat (a run on a machine whose
heartbeat is younger than SPARKDASH_RELAY_ACTIVE_S is refused) and its RelayState row: where it
listens, which engine it forwards to, and the writer's counters. A clean exit clears the mark.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from engines.models import Machine
from traffic.models import LOG_WARNINGS_KEPT, RelayState
from traffic.writer import WriterCounters

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RelayStatus:
    """What one heartbeat says: since when, where it listens, its engine's URL, the writer's counters."""

    started: datetime
    addresses: dict[str, str]
    upstream: str
    counters: WriterCounters
    log_lines: tuple[str, ...] = ()  # engine log lines worth a warning, new since the last beat


def beat(machine_id: int, status: RelayStatus) -> None:
    """Mark the machine's relay active now and store what it says about itself."""
    now = timezone.now()
    Machine.objects.filter(pk=machine_id).update(relay_heartbeat=now)
    counters = status.counters
    state, _ = RelayState.objects.update_or_create(
        machine_id=machine_id,
        defaults={
            "started": status.started, "heartbeat": now, "addresses": status.addresses,
            "upstream": status.upstream, "accepted": counters.accepted, "stored": counters.stored,
            "buffered": counters.buffered, "dropped": counters.dropped, "last_error": counters.last_error,
        },
    )
    if status.log_lines:
        seen = [{"at": now.isoformat(), "line": line[:500]} for line in status.log_lines]
        state.log_warnings = (state.log_warnings + seen)[-LOG_WARNINGS_KEPT:]
        state.save(update_fields=["log_warnings"])


def clear(machine_id: int) -> None:
    """The relay stopped: runs may use the machine again at once (not SPARKDASH_RELAY_ACTIVE_S later)."""
    Machine.objects.filter(pk=machine_id).update(relay_heartbeat=None)


class Heartbeat:
    """Calls `tick` every `interval_s` seconds on a thread of its own until stopped.

    A database error in a tick is logged and the next tick tries again on a fresh connection:
    the relay keeps passing traffic (and its writer keeps buffering) while Postgres restarts.
    """

    def __init__(self, tick: Callable[[], None], interval_s: float, what: str = "relay heartbeat") -> None:
        """:param what: what a tick stores, for the log line when the database refuses it."""
        self._tick, self._interval_s, self._what = tick, interval_s, what
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=what.replace(" ", "-"), daemon=True)

    def start(self) -> None:
        """Start ticking (the first tick comes after one interval: the caller made the first beat)."""
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop ticking; waits up to `timeout` for a tick in progress."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stopped.wait(self._interval_s):
                try:
                    close_old_connections()
                    self._tick()
                except DatabaseError as exc:
                    log.warning("%s not stored: %s", self._what, exc)
                    with suppress(DatabaseError):
                        connection.close()
        finally:
            connection.close()
