"""One measuring process of a split load level (runs.core.jobs.concurrency.pool starts it).

It builds its own engine client from a ClientRecipe (warmed on a throwaway server) and waits
for bursts on its pipe. For each burst it sleeps until the shared planned start, sends its
share of the requests at once, and times every chunk where its bytes are read, exactly as the
single-process loop does (the same client, the same Failures.send, the same request_metrics).
Each finished request's row goes back in batches (Outbox), so a process that dies loses only
what it had not sent yet. Its own event loop is watched by a ClientHealth from its first burst's
wait on, and those figures are its last message.

Plain Python, no Django: only the engine clients, the outcomes rule and the client health.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from engines.clients import client_for
from engines.clients.base import EngineClient, Generation, GenerationRequest, now
from engines.errors import EngineError
from measure import event_loop
from measure.client_health import ClientHealth
from runs.core.outcomes import Failures
from runs.core.request_figures import request_metrics

__all__ = ["BATCH_ROWS", "BATCH_WAIT_S", "HEALTH_KEYS", "Outbox", "error_message", "serve"]

BATCH_ROWS = 32  # rows per message at most: a pickle of a few kB, cheap to send between chunks
BATCH_WAIT_S = 0.25  # a finished row waits at most this long before it is sent
# What a measuring process says of its own loop (measure.client_health.ClientHealth.figures).
HEALTH_KEYS = ("loop_lag_ms", "probes", "late_probes", "wall_s", "cpu_pct_of_core", "loop_cpu_pct_of_core")

Share = Sequence[tuple[int, GenerationRequest]]  # (index in the burst, request)


def serve(conn: Connection, recipe: tuple[str, str, str, float]) -> None:
    """The process's target: serve bursts on `conn` until told to stop (or the pipe closes)."""
    event_loop.run(_serve(conn, recipe))


async def _serve(conn: Connection, recipe: tuple[str, str, str, float]) -> None:
    commands: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    loop.add_reader(conn.fileno(), _read_commands, conn, commands, loop)
    kind, base_url, api_key, timeout = recipe
    failures = Failures()
    async with client_for(kind, base_url, api_key, timeout) as client:
        await _warm(client)
        async with ClientHealth() as health:
            conn.send(("ready",))
            while (command := await commands.get())[0] == "burst":
                await _until_done_or_stopped(_burst(conn, client, failures, *command[1:]), commands)
    loop.remove_reader(conn.fileno())
    figures = health.figures()
    with contextlib.suppress(OSError):  # the parent may be gone already
        conn.send(("health", {key: figures[key] for key in HEALTH_KEYS}))


async def _warm(client: EngineClient) -> None:
    """One request through the client's HTTP stack to a throwaway server of its own, never the
    engine's: the first request's lazy imports and set-up (~50 ms) would otherwise fall on the
    first burst's sends, where the job's process has its warm-up request to take them."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        await client.http.get(f"http://127.0.0.1:{port}/")


def _read_commands(conn: Connection, commands: asyncio.Queue[tuple[Any, ...]], loop: Any) -> None:
    try:
        while conn.poll():
            commands.put_nowait(conn.recv())
    except (EOFError, OSError):  # the parent closed its end: stop as if told to
        loop.remove_reader(conn.fileno())
        commands.put_nowait(("stop",))


async def _until_done_or_stopped(burst: Any, commands: asyncio.Queue[tuple[Any, ...]]) -> None:
    """Run the burst; a command arriving meanwhile (stop) cancels it and is put back."""
    work = asyncio.ensure_future(burst)
    heard = asyncio.ensure_future(commands.get())
    await asyncio.wait({work, heard}, return_when=asyncio.FIRST_COMPLETED)
    if heard.done():
        commands.put_nowait(heard.result())
        work.cancel()
    else:
        heard.cancel()
    await asyncio.gather(work, heard, return_exceptions=True)


async def _burst(
    conn: Connection, client: EngineClient, failures: Failures, burst_id: int, planned: float, where: str,
    c: int, share: Share,
) -> None:
    """The share of one burst, started at `planned`: rows sent as they finish, then "done" (or
    "failed" with the error that stops the run, after the rows finished before it)."""
    await asyncio.sleep(max(0.0, planned - now()))
    outbox = Outbox(conn, burst_id)

    async def one(index: int, request: GenerationRequest) -> None:
        result = await failures.send(client, request, f"{where}, request {index + 1} of {c}")
        outbox.add(index, result)

    tasks = [asyncio.ensure_future(one(index, request)) for index, request in share]
    try:
        await asyncio.gather(*tasks)
    except EngineError as exc:
        await _cancelled(tasks)
        outbox.flush()
        conn.send(("failed", burst_id, error_message(exc)))
        return
    except BaseException:
        await _cancelled(tasks)
        raise
    outbox.flush()
    conn.send(("done", burst_id))


async def _cancelled(tasks: Sequence[asyncio.Future[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def error_message(exc: EngineError) -> tuple[str, str, dict[str, Any]]:
    """An engine error as it crosses the pipe: its class name, message and fields (an HTTP status)."""
    return type(exc).__name__, str(exc), dict(exc.__dict__)


class Outbox:
    """Finished rows of one burst, sent in batches of BATCH_ROWS or after BATCH_WAIT_S.

    A row is the single-process loop's (request_metrics of the Generation, or the failed row)
    with the request's finish time beside it, which the parent needs for total tok/s and the
    achieved concurrency and which the row itself does not hold.
    """

    def __init__(self, conn: Connection, burst_id: int) -> None:
        self.conn = conn
        self.burst_id = burst_id
        self.rows: list[tuple[int, dict[str, Any], float | None]] = []
        self._timer: asyncio.TimerHandle | None = None

    def add(self, index: int, result: Generation | dict[str, Any]) -> None:
        if isinstance(result, Generation):
            self.rows.append((index, request_metrics(result), result.finished_at))
        else:
            self.rows.append((index, result, None))
        if len(self.rows) >= BATCH_ROWS:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(BATCH_WAIT_S, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.rows:
            rows, self.rows = self.rows, []
            self.conn.send(("rows", self.burst_id, rows))
