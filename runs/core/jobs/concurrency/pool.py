"""The measuring processes of split load levels, seen from the job's process (child.py is the other side).

Started from a 'forkserver' context (the worker has threads, so no plain fork) that preloads
child.py, so each process starts from a clean interpreter holding only the engine clients, and
later ones start in milliseconds. Each talks to the job's loop over its own pipe, read with
add_reader so the job's loop never blocks on it:

- to a process: ("burst", id, planned, where, c, [(index, request)]) and ("stop",);
- from it: ("ready",), ("rows", id, [(index, row, finished_at)]), ("done", id),
  ("failed", id, (error class, message, fields)), ("health", figures), and, when its pipe
  closes before "health", ("gone",), noted by the reader.

A burst has one plan: every request's planned start is the same moment, `planned`, a little
ahead of now (LEAD_S) so that every process has its share before it; its schedule delay stays
its send minus that moment, on the one clock every process shares (perf_counter is
CLOCK_MONOTONIC on Linux). A process that dies fails the run with MeasuringProcessLost, which
carries the burst's rows that had arrived so the job can keep them. Plain Python, no Django.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from engines import errors
from engines.clients.base import EngineClient, GenerationRequest, now
from runs.core.jobs.concurrency import child

__all__ = ["LEAD_S", "ClientRecipe", "MeasuringPool", "MeasuringProcessLost", "Received", "shares"]

LEAD_S = 0.05  # from planning a burst to its start: time for every process to hear of it
START_TIMEOUT_S = 60.0  # a cold forkserver on a busy box takes seconds
STOP_TIMEOUT_S = 10.0
Received = dict[int, tuple[dict[str, Any], float | None]]  # index -> (row, finished_at or None)
_ERRORS = {cls.__name__: cls for cls in (errors.EngineError, errors.EngineHTTPError, errors.EngineCut,
                                        errors.EngineMalformed, errors.EngineTimeout,
                                        errors.EngineUnreachable, errors.NoTokenCount)}


class MeasuringProcessLost(Exception):
    """A measuring process died or could not start; the message says when and what was lost.

    `rows` are the rows of the burst it died in that had arrived from every process (kept).
    """

    def __init__(self, message: str, rows: Received | None = None) -> None:
        super().__init__(message)
        self.rows: Received = rows or {}


@dataclass(frozen=True)
class ClientRecipe:
    """What a measuring process needs to build the same engine client as the job's."""

    kind: str
    base_url: str
    api_key: str
    timeout_s: float

    @classmethod
    def of(cls, client: EngineClient) -> ClientRecipe:
        """The recipe of a client made by engines.clients.client_for; ValueError for any other."""
        if not client.engine_kind:
            raise ValueError("a load level can only be split across processes for a client made for an "
                             "engine kind (engines.clients.client_for)")
        bearer = client.http.headers.get("authorization", "")
        api_key = bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else ""
        timeout = client.http.timeout.read
        return cls(client.engine_kind, client.base_url, api_key, 300.0 if timeout is None else timeout)


def shares(c: int, n: int) -> list[range]:
    """Indices 0..c-1 in n contiguous parts whose sizes differ by one at most."""
    size, extra = divmod(c, n)
    bounds = [k * size + min(k, extra) for k in range(n + 1)]
    return [range(bounds[k], bounds[k + 1]) for k in range(n)]


@dataclass
class _Child:
    number: int
    process: Any  # multiprocessing's Process of the forkserver context
    conn: Connection
    health: dict[str, Any] | None = None
    gone: bool = False


class MeasuringPool:
    """Measuring processes, started as levels need them (`grow`) and stopped together (`close`)."""

    def __init__(self, recipe: ClientRecipe) -> None:
        self.recipe = recipe
        self.children: list[_Child] = []
        self.inbox: asyncio.Queue[tuple[int, tuple[Any, ...]]] = asyncio.Queue()
        self._bursts = 0

    async def grow(self, n: int) -> None:
        """Have at least n processes, each ready (its client built), or raise MeasuringProcessLost."""
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([child.__name__])
        recipe = (self.recipe.kind, self.recipe.base_url, self.recipe.api_key, self.recipe.timeout_s)
        starting = set()
        while len(self.children) < n:
            ours, theirs = context.Pipe()
            process = context.Process(target=child.serve, args=(theirs, recipe), daemon=True,
                                      name=f"sparkdash-measuring-{len(self.children) + 1}")
            await asyncio.to_thread(process.start)  # a cold forkserver would stall the job's loop
            theirs.close()  # its end lives in the process only: its death closes the pipe
            new = _Child(len(self.children), process, ours)
            asyncio.get_running_loop().add_reader(ours.fileno(), self._readable, new)
            self.children.append(new)
            starting.add(new.number)
        async with asyncio.timeout(START_TIMEOUT_S):
            await self._until(starting, "ready", "while starting", {})

    async def burst(
        self, requests: Sequence[GenerationRequest], n: int, where: str
    ) -> tuple[float, Received]:
        """Send requests[i] for every i at once, split over the first n processes; the planned
        start and each request's row (with its finish time; None for a failed request).

        Raises the engine error that stops the run, or MeasuringProcessLost.
        """
        self._bursts += 1
        burst_id, planned, c = self._bursts, now() + LEAD_S, len(requests)
        parts = shares(c, n)
        received: Received = {}
        for part, kid in zip(parts, self.children, strict=False):
            try:
                kid.conn.send(("burst", burst_id, planned, where, c, [(i, requests[i]) for i in part]))
            except OSError:
                self._gone(kid)
        waiting = {kid.number for kid in self.children[:n]}
        await self._until(waiting, "done", f"during {where}", received, burst_id, parts)
        return planned, received

    async def _until(
        self, waiting: set[int], what: str, when: str, received: Received, burst_id: int = 0,
        parts: Sequence[range] = (),
    ) -> None:
        """Read the processes' messages until each of `waiting` said `what`."""
        while waiting:
            number, message = await self.inbox.get()
            kind = message[0]
            if kind == "gone":
                raise self._lost(self.children[number], when, received, parts)
            if len(message) > 1 and message[1] != burst_id and kind in ("rows", "done", "failed"):
                continue  # a message of an earlier burst that stopped the run
            if kind == "rows":
                received.update((index, (row, finished)) for index, row, finished in message[2])
            elif kind == "failed":
                raise engine_error(*message[2])
            elif kind == "health":
                self.children[number].health = message[1]
            if kind == what:
                waiting.discard(number)

    def _readable(self, kid: _Child) -> None:
        try:
            while kid.conn.poll():
                message = kid.conn.recv()
                if message[0] == "health":
                    kid.health = message[1]
                self.inbox.put_nowait((kid.number, message))
        except (EOFError, OSError):
            self._gone(kid)

    def _gone(self, kid: _Child) -> None:
        if not kid.gone:
            kid.gone = True
            asyncio.get_running_loop().remove_reader(kid.conn.fileno())
            self.inbox.put_nowait((kid.number, ("gone",)))

    def _lost(
        self, kid: _Child, when: str, received: Received, parts: Sequence[range]
    ) -> MeasuringProcessLost:
        kid.process.join(1.0)  # its pipe closed: it has exited, or is exiting
        part = parts[kid.number] if kid.number < len(parts) else range(0)
        lost = sum(1 for i in part if i not in received)
        message = (f"measuring process {kid.number + 1} of {len(self.children)} (pid {kid.process.pid}) "
                   f"{_exit(kid.process.exitcode, 'closed its pipe')} {when}")
        if parts:
            message += (f": {lost} of its {len(part)} requests were lost; the {len(received)} requests "
                        "of the burst that had finished are kept")
        return MeasuringProcessLost(message, received)

    async def close(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Stop every process: the health figures of those that said them, and a line for each that
        did not (died before, or killed after STOP_TIMEOUT_S): its figures are lost."""
        for kid in self.children:
            if not kid.gone and kid.health is None:
                try:
                    kid.conn.send(("stop",))
                except OSError:
                    self._gone(kid)
        try:
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await self._drain_healths()
        except TimeoutError:
            pass  # those still silent are killed below
        loop = asyncio.get_running_loop()
        for kid in self.children:
            if not kid.gone:
                kid.gone = True
                loop.remove_reader(kid.conn.fileno())
        await asyncio.gather(*(asyncio.to_thread(_ended, kid) for kid in self.children))
        lost = [f"measuring process {kid.number + 1} (pid {kid.process.pid}) {_exit(kid.process.exitcode)}"
                for kid in self.children if kid.health is None]
        return [kid.health | {"pid": kid.process.pid} for kid in self.children if kid.health], lost

    async def _drain_healths(self) -> None:
        while any(kid.health is None and not kid.gone for kid in self.children):
            await self.inbox.get()  # _readable notes each health and each closed pipe


def engine_error(name: str, message: str, fields: dict[str, Any]) -> errors.EngineError:
    """The engine error a measuring process sent, rebuilt as its own class (EngineError if unknown)."""
    cls = _ERRORS.get(name, errors.EngineError)
    exc = cls.__new__(cls)
    exc.__dict__.update(fields)
    exc.args = (message,)
    return exc


def _ended(kid: _Child) -> None:
    kid.process.join(STOP_TIMEOUT_S if kid.health is not None else 0.5)
    if kid.process.is_alive():
        kid.process.kill()
        kid.process.join(STOP_TIMEOUT_S)
    kid.conn.close()


def _exit(code: int | None, alive: str = "did not stop") -> str:
    if code is None:
        return alive
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"
