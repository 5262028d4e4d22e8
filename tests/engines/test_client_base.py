"""EngineClient: TTFT starts when the request goes out, not when the harness builds it; a lost
connection is an EngineError, whichever event loop meets it."""
from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from engines.clients import GenerationRequest, base, client_for
from engines.errors import EngineError
from engines.simulator import SimProfile, serve_in_thread
from measure import event_loop
from tests.engines.resetting import resetting_engine

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



async def _failures(url: str, attempts: int) -> Counter[str]:
    seen: Counter[str] = Counter()
    for _ in range(attempts):
        async with client_for("vllm", url) as client:
            try:
                await client.counters_text()
            except EngineError as exc:
                seen[type(exc).__name__] += 1
    return seen


def test_it_raises_an_engine_error_for_a_connection_reset_as_it_opens_on_uvloop() -> None:
    # uvloop drops a reset connection's socket before httpcore asks it about TLS; before the client
    # caught that, about 5 % of these attempts raised a bare AttributeError (48 of 1,000).
    with resetting_engine() as url:
        seen = event_loop.run(_failures(url, 400))
    assert sum(seen.values()) == 400, seen
