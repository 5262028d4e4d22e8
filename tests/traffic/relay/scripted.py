"""Scripted engines for the relay's tests: tiny raw ASGI apps served on a real socket.

The simulator covers well-formed answers; these play what it cannot: recorded OpenAI tool-call
deltas, an error line mid-stream, an endless stream that notes when its client leaves, and a chat
template that refuses a second system message with HTTP 500.
"""
from __future__ import annotations

import asyncio
import json
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from traffic.relay import Gate, Limits, RelayServer, TrafficRecord, Upstream, build_relay, open_gate


class Scripted:
    """An ASGI engine answering every POST with `lines` (raw, each sent on its own `delay_s` apart)."""

    def __init__(self, lines: list[bytes], media: str, delay_s: float = 0.0, forever: bool = False,
                 status: int = 200) -> None:
        self.lines, self.media, self.delay_s = lines, media, delay_s
        self.forever, self.status = forever, status
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[bytes, bytes]] = []
        self.client_left = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw, more = b"", True
        while more:
            message = await receive()
            raw, more = raw + message.get("body", b""), message.get("more_body", False)
        self.bodies.append(json.loads(raw or b"{}"))
        self.headers.append(dict(scope["headers"]))
        status = self.answer_status(self.bodies[-1])
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", self.media.encode())]})
        writer = asyncio.ensure_future(self._write(send, status))
        await self._watch(receive, writer)

    def answer_status(self, body: dict[str, Any]) -> int:
        return self.status

    async def _write(self, send: Any, status: int) -> None:
        # A status of its own (a refusal) comes with its own error body.
        lines = self.lines if status == self.status else [json.dumps({"error": "template refused"}).encode()]
        while True:
            for line in lines:
                await send({"type": "http.response.body", "body": line, "more_body": True})
                await asyncio.sleep(self.delay_s)
            if not self.forever:
                break
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch(self, receive: Any, writer: asyncio.Future[None]) -> None:
        gone = asyncio.ensure_future(self._gone(receive))
        done, _ = await asyncio.wait({writer, gone}, return_when=asyncio.FIRST_COMPLETED)
        if gone in done and not writer.done():
            self.client_left.set()
        writer.cancel()
        gone.cancel()

    async def _gone(self, receive: Any) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass


class TwoSystemsRefused(Scripted):
    """An OpenAI engine whose chat template answers HTTP 500 to two system messages."""

    def answer_status(self, body: dict[str, Any]) -> int:
        systems = [m for m in body.get("messages", []) if m.get("role") == "system"]
        return 500 if len(systems) > 1 else 200


def sse(*bodies: dict[str, Any]) -> list[bytes]:
    """Each body as one SSE data event, then [DONE]."""
    return [b"data: " + json.dumps(b).encode() + b"\n\n" for b in bodies] + [b"data: [DONE]\n\n"]


def ndjson(*bodies: dict[str, Any]) -> list[bytes]:
    """Each body as one NDJSON line."""
    return [json.dumps(b).encode() + b"\n" for b in bodies]


class Relay:
    """A relay server in a thread and the records its sink got."""

    def __init__(self, server: RelayServer, records: queue.Queue[TrafficRecord]) -> None:
        self.server, self.url, self.records = server, server.url, records

    def record(self, timeout: float = 5.0) -> TrafficRecord:
        """The next record handed to the sink."""
        return self.records.get(timeout=timeout)


@contextmanager
def relay_to(up: Upstream, gate: Gate = open_gate, limits: Limits | None = None) -> Iterator[Relay]:
    """A relay in front of `up`, its records in a queue; `gate` and `limits` as build_relay's."""
    records: queue.Queue[TrafficRecord] = queue.Queue()
    with RelayServer(build_relay(lambda: up, records.put, gate, limits)) as server:
        yield Relay(server, records)


@contextmanager
def engine(app: Any) -> Iterator[str]:
    """A scripted engine on a free port; yields its URL."""
    with RelayServer(app) as server:
        yield server.url
