"""EngineClient.generate: TTFT starts when the request goes out, not when the harness builds it."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from engines.clients import GenerationRequest, base, client_for
from engines.simulator import SimProfile, serve_in_thread

pytestmark = pytest.mark.backend_free

REQUEST = GenerationRequest(model="sim", messages=[{"role": "user", "content": "hi"}], max_tokens=4)


async def test_it_stamps_sent_at_when_the_request_headers_start_going_out() -> None:
    ready: list[float] = []

    async def slow_client_side(request: httpx.Request) -> None:
        await asyncio.sleep(0.05)  # the harness's own work before the request can leave
        ready.append(base.now())

    with serve_in_thread(SimProfile(decode_tps=1000.0, ttft_ms=1.0)) as sim:
        async with client_for("llama-server", sim.url) as client:
            client.http.event_hooks["request"] = [slow_client_side]
            started = base.now()
            gen = await client.generate(REQUEST)
    assert started + 0.05 <= ready[0] <= gen.sent_at
    assert gen.first_token_at is not None and gen.sent_at < gen.first_token_at
