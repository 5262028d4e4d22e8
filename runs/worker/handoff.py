"""The hand-off between a job's measuring loop and its recording (issue 41: timing first, recording after).

The job's event loop reads the engine's streams; storing samples (the database) and pushing live
updates (the channel layer) run on a thread of their own (`DrainThread`), so neither ever delays
a chunk's read. The measuring loop only appends a sample and, once per flush interval, wakes the
drain. The thread serves a loop (live updates, timers) and, between turns of it, runs the
recorder's passes as plain calls, where Django lets them use its ORM directly.

Only live updates are bounded (`LiveUpdates`): when LIVE_UPDATES_BOUND of them wait unsent, the
newest waiting one absorbs the next (its samples appended, its run replaced) and the absorbed one
is counted as thinned. Watchers still receive every sample, in fewer messages. Samples are never
dropped: they wait in the recorder's pending list until stored, written in one batch per pass, so
a slow database makes batches larger, not the list lossy.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from measure import event_loop

__all__ = ["LIVE_UPDATES_BOUND", "DrainThread", "LiveUpdate", "LiveUpdates"]

T = TypeVar("T")

# Live updates waiting unsent before they are coalesced: a few flushes' worth (at 4 flushes a
# second, two seconds of a channel layer that stopped answering).
LIVE_UPDATES_BOUND = 8
_JOIN_S = 10.0


class DrainThread:
    """A daemon thread serving an event loop of its own, started on the first `submit` or `call`.

    `call(fn)` runs `fn` on the thread between two turns of the loop: the loop is stopped, so no
    loop runs on the thread, and Django lets `fn` use its ORM there. A store so needs no hop to
    asgiref's database thread and back, two thread wakes and a fifth of the drain's CPU a pass
    (issue 41's profile). Coroutines the loop was running (a live update being sent) wait meanwhile.

    :param on_exit: called on the thread as it ends (the recorder closes its database connection)
    """

    def __init__(self, name: str, on_exit: Callable[[], None] | None = None) -> None:
        self.loop = event_loop.new_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._lock = threading.Lock()
        self._calls: list[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = []
        self._interrupt_asked = False  # an `_interrupt` is on its way to the loop
        self._stopping = self._closing = False
        self._on_exit = on_exit

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the drain loop; its result comes in the returned future (thread-safe)."""
        self._start()
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run `fn()` on the thread with its loop stopped, after the calls before it (thread-safe)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            self._calls.append((fn, future))
        self._start()
        self._ask_interrupt()
        return future

    def stop(self) -> None:
        """Stop the loop once what runs on it now yields, after the calls asked for; wait for the thread."""
        if self._thread.is_alive():
            self._stopping = True
            self._ask_interrupt()
            self._thread.join(_JOIN_S)
        elif not self.loop.is_closed() and self._thread.ident is None:
            self.loop.close()

    def _start(self) -> None:
        with self._lock:
            if not self._thread.is_alive() and not self.loop.is_closed():
                self._thread.start()

    def _ask_interrupt(self) -> None:
        with self._lock:
            if self._interrupt_asked:  # one on its way takes every call asked for before it runs
                return
            self._interrupt_asked = True
        self.loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        with self._lock:
            self._interrupt_asked = False
        if not self._closing:
            self.loop.stop()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            while True:
                self.loop.run_forever()
                self._run_calls()
                if self._stopping:
                    break
        finally:
            self._closing = True
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()
            self._run_calls()  # any asked for while it stopped
            if self._on_exit is not None:
                self._on_exit()

    def _run_calls(self) -> None:
        with self._lock:
            calls, self._calls = self._calls, []
        for fn, future in calls:
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)


@dataclass
class LiveUpdate:
    """One flush's news for the run's watchers: its samples (as sent) and the run's shape."""

    samples: list[dict[str, Any]]
    run: dict[str, Any]
    merged: int = field(default=0)


class LiveUpdates:
    """A bounded queue of live updates, sent one at a time by `serve`; lives on the drain loop."""

    def __init__(
        self, send: Callable[[LiveUpdate], Awaitable[None]], on_thinned: Callable[[int], None],
        bound: int = LIVE_UPDATES_BOUND,
    ) -> None:
        self.bound = max(1, bound)
        self._send, self._on_thinned = send, on_thinned
        self._waiting: deque[LiveUpdate] = deque()
        self._wake, self._idle = asyncio.Event(), asyncio.Event()
        self._idle.set()

    def offer(self, update: LiveUpdate) -> None:
        """Queue `update`; when the queue is full, fold it into the newest waiting one (thinned)."""
        if len(self._waiting) >= self.bound:
            last = self._waiting[-1]
            last.samples += update.samples
            last.run = update.run
            last.merged += 1
            self._on_thinned(1)
            return
        self._waiting.append(update)
        self._idle.clear()
        self._wake.set()

    async def serve(self) -> None:
        """Send the waiting updates in order, forever (cancel to stop)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._waiting:
                with contextlib.suppress(Exception):  # broadcast() already logs and swallows
                    await self._send(self._waiting.popleft())
            self._idle.set()

    async def drained(self, limit_s: float) -> None:
        """Wait until every waiting update is sent, for at most `limit_s`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit_s):
                await self._idle.wait()
