"""A pooled connection the engine closes as a request goes out: the relay sends it again, on a
connection of its own, and the client never sees the failure (issue: 2 of 12 relayed requests
answered 502 "Server disconnected" against a live llama-server)."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from traffic.relay.upstream import Upstream, UpstreamError, Wire

pytestmark = pytest.mark.backend_free

ANSWER = json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()


class ClosingEngine:
    """An HTTP/1.1 engine that answers the first `answered` requests of each connection with
    keep-alive, then reads the next one and closes without a word: the race of an idle timeout."""

    def __init__(self, answered: int = 1, refuse_new: bool = False) -> None:
        self.answered, self.refuse_new = answered, refuse_new
        self.connections = self.requests = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        while head := await reader.readuntil(b"\r\n\r\n"):
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            await reader.readexactly(length)
            self.requests += 1
            if served >= self.answered or (self.refuse_new and self.connections > 1):
                break
            served += 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nKeep-Alive: timeout=5\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER))
            await writer.drain()
        writer.close()


@asynccontextmanager
async def closing_engine(engine: ClosingEngine) -> AsyncIterator[str]:
    server = await asyncio.start_server(engine.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


async def ask(wire: Wire, url: str) -> dict:
    return await wire.json(Upstream(url, "openai"), "POST", "/v1/chat/completions", {"model": "m"})


async def test_it_sends_a_request_again_on_a_new_connection_when_the_pooled_one_gives_no_answer() -> None:
    engine, wire = ClosingEngine(), Wire()
    async with closing_engine(engine) as url:
        answers = [await ask(wire, url) for _ in range(4)]
    await wire.aclose()
    assert all(a["choices"][0]["message"]["content"] == "hi" for a in answers)
    # A pooled reuse failed and went again on a connection of its own; every request sent again
    # reached the engine twice (how many reuses there are depends on when the pool sees a close).
    assert wire.retried >= 1 and engine.requests == 4 + wire.retried


async def test_it_reports_both_failures_when_the_new_connection_fails_too() -> None:
    engine, wire = ClosingEngine(refuse_new=True), Wire()
    async with closing_engine(engine) as url:
        await ask(wire, url)
        failed = pytest.raises(UpstreamError, match="retried on a new connection after: Server disconnected")
        with failed as caught:
            await ask(wire, url)
    await wire.aclose()
    assert caught.value.status == 502 and wire.retried == 1
