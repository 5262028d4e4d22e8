"""vLLM's side of a relayed request read from its /metrics, without delaying the request."""
from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.engines.test_counters_text import vllm_requests
from tests.traffic.relay.scripted import engine, relay_to
from traffic.relay import Upstream

pytestmark = pytest.mark.backend_free

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
TOKENS = 9


class FakeVllm:
    """Streams 9 tokens with usage and no timings; each finished request adds to its counters a
    moment after its last chunk (decode 0.8 s, TTFT 0.1 s, 4 cached prompt tokens), as vLLM's land.
    As vLLM's own /metrics does, it also exports its process's CPU time, which each read moves."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.finished, self.delay_s, self.counters_reads = 0, delay_s, 0

    def text(self) -> str:
        n = self.finished
        process = f"process_cpu_seconds_total {0.01 * self.counters_reads:.2f}\n"
        return vllm_requests(n, TOKENS * n, round(0.8 * n, 3), round(0.1 * n, 3), 4 * n) + process

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/metrics":
            self.counters_reads += 1
            return await self._send(send, "text/plain", [self.text().encode()])
        while (await receive()).get("more_body"):
            pass
        chunks = [{"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}] * TOKENS
        chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
                   {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": TOKENS}}]
        events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]
        await asyncio.sleep(self.delay_s)
        await self._send(send, "text/event-stream", events)
        await asyncio.sleep(0.03)
        self.finished += 1

    async def _send(self, send: Any, media: str, parts: list[bytes]) -> None:
        headers = [(b"content-type", media.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for part in parts:
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def chat(url: str) -> None:
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=CHAT, timeout=10) as response:
        for _ in response.iter_lines():
            pass


def test_it_fills_a_lone_requests_figures_from_the_counters_after_it() -> None:
    fake = FakeVllm()
    with engine(fake) as url, relay_to(Upstream(url, "openai", engine_kind="vllm")) as relay:
        chat(relay.url)
        first = relay.record()
        chat(relay.url)
        second = relay.record()
    assert first.decode_tps_engine is None  # no snapshot before it: the relay did not wait to take one
    assert second.decode_tps_engine == pytest.approx((TOKENS - 1) / 0.8)
    assert (second.prompt_tokens, second.new_prompt_tokens, second.output_tokens) == (10, 6, TOKENS)


def test_it_gives_overlapping_requests_no_counter_figures() -> None:
    fake = FakeVllm(delay_s=0.1)
    with engine(fake) as url, relay_to(Upstream(url, "openai", engine_kind="vllm")) as relay:
        chat(relay.url)
        relay.record()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(chat, [relay.url, relay.url]))
        both = [relay.record(), relay.record()]
    assert [r.decode_tps_engine for r in both] == [None, None]
    assert [r.output_tokens for r in both] == [TOKENS, TOKENS]


def test_it_reads_no_counters_for_engines_whose_answers_carry_figures() -> None:
    fake = FakeVllm()
    with engine(fake) as url, relay_to(Upstream(url, "openai", engine_kind="llama-server")) as relay:
        chat(relay.url)
        relay.record()
    assert fake.counters_reads == 0
