"""The simulator's shared models: the batch (concurrency cost) and the prompt cache."""
from __future__ import annotations

import asyncio
import itertools
import time
from io import StringIO
from typing import Any
from unittest import mock

import httpx
import pytest
from django.core.management import call_command

from engines.simulator import SimProfile, plan, serve_in_thread
from engines.simulator.app import Batch
from engines.simulator.cache import PromptCache, n_tokens

pytestmark = pytest.mark.backend_free

CONVERSATION = "".join(f"line {i:04d} of a long file\n" for i in range(400))  # 10,000 chars


def ask(content: str, n: int = 4) -> dict[str, Any]:
    return {"model": "sim", "messages": [{"role": "user", "content": content}], "max_tokens": n}


async def sse_final(client: httpx.AsyncClient, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(TTFT, the usage chunk) of one streamed OpenAI request."""
    body = body | {"stream": True, "stream_options": {"include_usage": True}}
    sent, ttft, last = time.perf_counter(), None, {}
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            data = httpx.Response(200, content=line[6:]).json()
            if ttft is None and data["choices"] and data["choices"][0]["delta"].get("content"):
                ttft = time.perf_counter() - sent
            last = data
    assert ttft is not None
    return ttft, last


# The batch


def test_it_keeps_a_lone_request_exactly_on_its_schedule() -> None:
    batch, sched = Batch(0.2), plan(SimProfile(lookahead=4), 50, seed=1)
    batch.active = 1
    assert list(batch.paced(sched)) == sched.emissions


def test_it_stretches_every_decode_step_by_the_batch_in_flight() -> None:
    batch, sched = Batch(0.2), plan(SimProfile(decode_tps=40, ttft_ms=150), 5)
    batch.active = 4
    paced = list(batch.paced(sched))
    steps = [b.offset_s - a.offset_s for a, b in itertools.pairwise(paced)]
    assert paced[0] == sched.emissions[0]  # prefill is not stretched
    assert steps == pytest.approx([1.6 / 40] * 4)


async def test_it_slows_concurrent_streams_by_the_batch_cost() -> None:
    profile = SimProfile(decode_tps=100, ttft_ms=20, batch_cost=0.25)
    with serve_in_thread(profile) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            finals = await asyncio.gather(*(sse_final(client, ask("Go.", 30)) for _ in range(5)))
    stretched_tps = 100 / (1 + 0.25 * 4)
    for _, final in finals:
        # The engine's own figure counts all 30 tokens over the 29 stretched steps.
        assert final["timings"]["predicted_per_second"] == pytest.approx(30 / 29 * stretched_tps, rel=0.03)


@pytest.mark.parametrize("fields", [{"batch_cost": -0.1}, {"prefill_tps": 0}, {"cache_tokens": -1}])
def test_it_rejects_impossible_model_fields(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SimProfile(**fields)


# The prompt cache, alone


def test_it_reuses_the_slots_prefix_and_computes_at_least_one_token() -> None:
    cache = PromptCache(None, log=[].append)
    assert cache.serve("a" * 400, "answer") == 0
    assert cache.serve("a" * 400 + "\nanswer\nmore", "x") == n_tokens("a" * 400 + "\nanswer\n") - 1
    assert cache.serve("a" * 400 + "\nanswer\nmore\nx", "y") == n_tokens("a" * 400 + "\nanswer\nmore\nx") - 1


def test_it_saves_the_slot_for_another_request_and_restores_it() -> None:
    log: list[str] = []
    cache = PromptCache(None, log=log.append)
    cache.serve(CONVERSATION, "answer")
    assert cache.serve("An unrelated question?", "Paris") == 0
    assert cache.serve(CONVERSATION + "\nanswer\nGo on.", "ok") == (len(CONVERSATION) + 7) // 4
    assert log == []


def test_it_drops_a_state_that_exceeds_the_limit_and_says_so() -> None:
    log: list[str] = []
    cache = PromptCache(1000, log=log.append)
    cache.serve(CONVERSATION, "answer")
    cache.serve("An unrelated question?", "Paris")
    assert cache.serve(CONVERSATION + "\nanswer\nGo on.", "ok") == 0
    (line,) = log
    assert "prompt state size 500.400 MiB exceeds cache size limit 200.000 MiB, skipping" in line


def test_it_evicts_the_oldest_saved_state_to_make_room() -> None:
    log: list[str] = []
    cache = PromptCache(60, log=log.append)
    for topic in ("alpha", "beta", "gamma"):
        cache.serve(topic * 20, "ok")
    assert cache.serve("alpha" * 20, "ok") == 0  # dropped for beta's and gamma's states
    assert cache.serve("gamma" * 20, "ok") == n_tokens("gamma" * 20) - 1
    assert any("removing oldest entry" in line for line in log)


def test_it_saves_nothing_when_the_ram_cache_is_off() -> None:
    log: list[str] = []
    cache = PromptCache(0, log=log.append)
    cache.serve(CONVERSATION, "answer")
    cache.serve("An unrelated question?", "Paris")
    assert cache.serve(CONVERSATION, "again") == 0
    assert log == []


# The prompt cache, over HTTP


async def _ttfts(profile: SimProfile) -> tuple[float, dict[str, Any], float, dict[str, Any]]:
    """TTFT and usage chunk of a long conversation, then of the same with one more line."""
    with serve_in_thread(profile) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            await client.get("/health")  # warm the connection
            first_ttft, first = await sse_final(client, ask(CONVERSATION))
            again_ttft, again = await sse_final(client, ask(CONVERSATION + "\n?"))
    return first_ttft, first, again_ttft, again


async def test_it_reports_cached_tokens_and_adds_new_ones_to_the_ttft() -> None:
    # The same two requests to a simulator whose prefill is instant (it still models the cache),
    # in the same run, are the reference: the loopback and the server's own handling of a
    # 2,500-token prompt (10-20 ms on a busy box) are in both; the difference is what prefill adds.
    instant = SimProfile(decode_tps=1000, ttft_ms=10, prefill_tps=1e9)
    base_first, _, base_again, _ = await _ttfts(instant)
    first_ttft, first, again_ttft, again = await _ttfts(
        SimProfile(decode_tps=1000, ttft_ms=10, prefill_tps=10_000)
    )
    assert first["timings"]["cache_n"] == 0
    # 2,500 new tokens at 10,000 tok/s add 250 ms; recomputing none would add 0. A CI run with three
    # passes side by side measured 223 ms (its reference request had come 27 ms late), so 50 ms.
    assert first_ttft - base_first == pytest.approx(2500 / 10_000, abs=0.050)
    timings, usage = again["timings"], again["usage"]
    assert timings["cache_n"] == usage["prompt_tokens_details"]["cached_tokens"] == 2500
    assert timings["cache_n"] + timings["prompt_n"] == usage["prompt_tokens"]
    # Only the new tokens are prefilled: under 1 ms, where recomputing the 2,500 cached ones would add
    # 250. The margin is 50 ms: CI, with a second suite beside this one, saw 16 ms of jitter.
    assert again_ttft - base_again == pytest.approx(timings["prompt_n"] / 10_000, abs=0.050)


async def test_it_counts_cached_tokens_in_ollamas_prompt_eval_count() -> None:
    profile = SimProfile(decode_tps=1000, ttft_ms=10, prefill_tps=10_000)
    body = {"model": "sim", "messages": [{"role": "user", "content": CONVERSATION}], "stream": False}
    with serve_in_thread(profile) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            await client.post("/api/chat", json=body)
            final = (await client.post("/api/chat", json=body)).json()
    assert final["prompt_eval_count"] == 2500
    assert final["prompt_eval_duration"] == pytest.approx((0.010 + 1 / 10_000) * 1e9)


async def test_it_logs_a_prompt_that_exceeds_the_cache_limit(capfd: pytest.CaptureFixture[str]) -> None:
    profile = SimProfile(decode_tps=1000, ttft_ms=5, prefill_tps=100_000, cache_tokens=1000)
    with serve_in_thread(profile) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            await sse_final(client, ask(CONVERSATION))
            await sse_final(client, ask("An unrelated question?"))
            _, continued = await sse_final(client, ask(CONVERSATION + "\nmore"))
    assert "exceeds cache size limit" in capfd.readouterr().err
    assert continued["timings"]["cache_n"] == 0


async def test_it_leaves_prefill_unmodelled_without_prefill_tps() -> None:
    with serve_in_thread(SimProfile(decode_tps=1000, ttft_ms=30)) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            finals = [(await sse_final(client, ask(CONVERSATION)))[1] for _ in range(2)]
    for final in finals:
        assert (final["timings"]["cache_n"], final["timings"]["prompt_n"]) == (0, 2500)
        assert final["timings"]["prompt_ms"] == pytest.approx(30.0)


# The command line


@mock.patch("engines.management.commands.simengine.serve_forever", autospec=True)
def test_it_takes_the_model_flags_on_the_command_line(serve_forever: mock.Mock) -> None:
    serve_forever.side_effect = lambda profile, host, port, on_ready, log_file: on_ready("http://127.0.0.1:9")
    out = StringIO()
    args = ["--port", "9", "--batch-cost", "0.1", "--prefill-tps", "800", "--cache-tokens", "40000"]
    call_command("simengine", *args, stdout=out)
    profile = SimProfile(batch_cost=0.1, prefill_tps=800, cache_tokens=40000)
    serve_forever.assert_called_once_with(profile, "127.0.0.1", 9, mock.ANY, None)
    assert "prompt cache limit 40000 tokens" in out.getvalue()
