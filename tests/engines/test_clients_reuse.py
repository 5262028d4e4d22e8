"""Engine clients read each answer to its end, so one connection serves request after request."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from engines.clients import GenerationRequest, client_for
from engines.clients.reuse import read_to_end
from engines.simulator import SimProfile, serve_in_thread

REQUEST = GenerationRequest(model="sim", messages=[{"role": "user", "content": "hi"}], max_tokens=4)


def count_connects(client: Any) -> list[str]:
    """A list that gets one entry per new TCP connection the client's pool opens."""
    connects: list[str] = []

    async def trace(name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.complete":
            connects.append(name)

    async def hook(request: httpx.Request) -> None:
        request.extensions["trace"] = trace

    client.http.event_hooks["request"] = [hook]
    return connects


@pytest.mark.parametrize("kind", ["llama-server", "ollama"])
async def test_it_reuses_one_connection_for_sequential_requests(kind: str) -> None:
    with serve_in_thread(SimProfile(decode_tps=1000.0, ttft_ms=1.0)) as sim:
        async with client_for(kind, sim.url) as client:
            connects = count_connects(client)
            gens = [await client.generate(REQUEST) for _ in range(3)]
    assert [g.figures.output_tokens for g in gens] == [4, 4, 4]
    assert connects == ["connection.connect_tcp.complete"]


async def test_it_stops_reading_an_answer_that_never_ends() -> None:
    async def endless() -> AsyncIterator[str]:
        while True:
            await asyncio.sleep(0.01)
            yield "data: more"

    started = time.perf_counter()
    await read_to_end(endless(), limit_s=0.2)
    assert 0.2 <= time.perf_counter() - started < 2
