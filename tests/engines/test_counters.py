"""vLLM's and llama-server's side of a request read from /metrics around it (engines.clients.counters)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from engines.clients import GenerationRequest, client_for
from engines.clients.counters import spec_since
from tests.engines.stream_factories import SSE, llama_timings, openai_chat_stream, serve, usage
from tests.engines.test_counters_text import llamacpp, vllm, vllm_requests

pytestmark = pytest.mark.backend_free

URL = "http://vllm.test:8000"
REQUEST = GenerationRequest(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=9)


def per_position(counts: list[int]) -> str:
    name = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    labels = 'engine="0",model_name="m"'
    return "".join(f'{name}{{{labels},position="{i}"}} {n}.0\n' for i, n in enumerate(counts))


BEFORE = vllm_requests(2, 100, 4.0, 0.4) + vllm(10, 40, 20) + per_position([9, 6, 3, 2])
AFTER = vllm_requests(3, 109, 5.6, 0.52, 4) + vllm(13, 52, 27) + per_position([12, 8, 4, 3])


def engine(snapshots: list[str], delay_s: float = 0.0):
    """A vLLM answering 9 tokens and /metrics with each snapshot in turn (the last one repeats)."""
    answers = iter(snapshots)
    last = [snapshots[-1]]

    def counters(_: httpx.Request) -> httpx.Response:
        last[0] = next(answers, last[0])
        return httpx.Response(200, text=last[0])

    async def chat(_: httpx.Request) -> httpx.Response:
        await asyncio.sleep(delay_s)
        return httpx.Response(200, content=openai_chat_stream(["a"] * 9, "vllm", usage(9)), headers=SSE)

    routes = {"GET /metrics": counters, "POST /v1/chat/completions": chat}
    return client_for("vllm", URL, transport=serve(routes))


async def test_it_fills_a_lone_requests_figures_from_the_counters_around_it():
    async with engine([BEFORE, AFTER]) as client:
        figures = (await client.generate(REQUEST)).figures
    assert figures.output_tokens == 9
    assert figures.decode_s == pytest.approx(1.6) and figures.decode_tps == pytest.approx(8 / 1.6)
    assert figures.ttft_s == pytest.approx(0.12) and figures.prompt_s == pytest.approx(0.06)
    assert (figures.verifications, figures.draft_tokens, figures.accepted_tokens) == (3, 12, 7)
    assert figures.accepted_by_position == [3, 2, 1, 1]
    assert figures.cached_tokens == 4  # usage said nothing of the cache


async def test_it_waits_for_counters_that_land_after_the_last_chunk():
    async with engine([BEFORE, BEFORE, BEFORE, AFTER]) as client:
        figures = (await client.generate(REQUEST)).figures
    assert figures.decode_s == pytest.approx(1.6)


async def test_it_gives_overlapping_requests_no_counter_figures():
    async with engine([BEFORE, AFTER], delay_s=0.05) as client:
        both = await asyncio.gather(client.generate(REQUEST), client.generate(REQUEST))
    assert [g.figures.decode_tps for g in both] == [None, None]
    assert [g.figures.output_tokens for g in both] == [9, 9]


async def test_it_keeps_the_replys_figures_when_counters_are_malformed_or_lack_spec_counters():
    async with engine(["<html>502</html>"]) as client:
        figures = (await client.generate(REQUEST)).figures
    assert (figures.output_tokens, figures.decode_tps, figures.verifications) == (9, None, None)
    plain = [vllm_requests(0, 0, 0.0, 0.0), vllm_requests(1, 9, 0.8, 0.1)]
    async with engine(plain) as client:
        figures = (await client.generate(REQUEST)).figures
    assert figures.decode_tps == pytest.approx(10.0)
    assert (figures.verifications, figures.accepted_by_position) == (None, None)  # not exposed: no drafting


async def test_it_takes_a_runs_drafts_once_the_engines_own_counters_settle():
    reads = []

    def counters(_: httpx.Request) -> httpx.Response:
        reads.append(1)  # the process's CPU time moves with each read, as a Python server's does
        return httpx.Response(200, text=AFTER + f"process_cpu_seconds_total {0.01 * len(reads):.2f}\n")

    async with client_for("vllm", URL, transport=serve({"GET /metrics": counters})) as client:
        spec = await spec_since(client, BEFORE)
    assert spec is not None and (spec.drafts, spec.draft_tokens, spec.accepted) == (3, 12, 7)
    assert len(reads) == 2  # two reads agreed: no waiting out every try


def llama_server(snapshots: list[str], draft_n: int = 12, accepted: int = 7):
    """A llama-server answering 20 tokens, `draft_n` drafted and `accepted` accepted by its timings,
    and /metrics with each snapshot in turn (the last one repeats)."""
    answers = iter(snapshots)
    last = [snapshots[-1]]

    def counters(_: httpx.Request) -> httpx.Response:
        last[0] = next(answers, last[0])
        return httpx.Response(200, text=last[0])

    def chat(_: httpx.Request) -> httpx.Response:
        timings = llama_timings(20, draft_n=draft_n, draft_n_accepted=accepted)
        body = openai_chat_stream(["a"] * 4, "llama-server", usage(20), timings=timings)
        return httpx.Response(200, content=body, headers=SSE)

    routes = {"GET /metrics": counters, "POST /v1/chat/completions": chat}
    return client_for("llama-server", "http://llama.test:8080", transport=serve(routes))


async def test_it_counts_a_lone_llama_server_requests_verifications_from_its_counters():
    # 20 tokens with 7 accepted: the estimate says 12 verifications (a step per token not accepted,
    # drafting or not); the counters say 3 steps checked a draft.
    before, after = llamacpp(10, 40, 20, [9, 6, 3, 2]), llamacpp(13, 52, 27, [12, 8, 4, 3])
    async with llama_server([before, before, after]) as client:
        figures = (await client.generate(REQUEST)).figures
    assert (figures.verifications, figures.draft_tokens, figures.accepted_tokens) == (3, 12, 7)
    assert figures.accepted_by_position == [3, 2, 1, 1]


async def test_it_keeps_llama_servers_estimate_when_another_clients_drafts_are_in_the_counters():
    before, mixed = llamacpp(10, 40, 20), llamacpp(20, 80, 35)
    async with llama_server([before, mixed]) as client:
        figures = (await client.generate(REQUEST)).figures
    assert (figures.verifications, figures.draft_tokens, figures.accepted_tokens) == (20 - 1 - 7, 12, 7)
    assert figures.accepted_by_position is None


async def test_it_gives_a_llama_server_request_that_did_not_draft_no_draft_figures():
    async with llama_server([llamacpp(10, 40, 20), llamacpp(13, 52, 27)], draft_n=0, accepted=0) as client:
        figures = (await client.generate(REQUEST)).figures
    assert (figures.verifications, figures.draft_tokens, figures.accepted_tokens) == (None, None, None)


def counting(snapshots: list[str], reads: list[str]):
    """/metrics answering each snapshot in turn (the last one repeats), noting each read."""
    answers = iter(snapshots)

    def counters(_: httpx.Request) -> httpx.Response:
        reads.append(next(answers, reads[-1] if reads else snapshots[-1]))
        return httpx.Response(200, text=reads[-1])

    return counters


async def test_it_reads_the_counters_once_per_lone_request_when_they_follow_each_other():
    third = vllm_requests(4, 118, 7.2, 0.64, 8) + vllm(16, 64, 34) + per_position([15, 10, 5, 4])
    reads: list[str] = []

    async def chat(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=openai_chat_stream(["a"] * 9, "vllm", usage(9)), headers=SSE)

    routes = {"GET /metrics": counting([BEFORE, AFTER, third], reads), "POST /v1/chat/completions": chat}
    async with client_for("vllm", URL, transport=serve(routes)) as client:
        first, second = [(await client.generate(REQUEST)).figures for _ in range(2)]
    assert len(reads) == 3  # not 4: the snapshot after the first is the second's before
    assert first.decode_s == pytest.approx(1.6) and second.decode_s == pytest.approx(1.6)
    assert (second.verifications, second.draft_tokens, second.accepted_tokens) == (3, 12, 7)


async def test_it_stops_reading_llama_servers_counters_until_it_drafts_and_then_always_reads_them():
    drafted = iter([0, 0, 0, 0, 0, 12, 0, 12])
    reads: list[str] = []
    first, second = llamacpp(10, 40, 20, [9, 6, 3, 2]), llamacpp(13, 52, 27, [12, 8, 4, 3])
    snapshots = [first] * 4 + [second, llamacpp(16, 64, 34, [15, 10, 5, 4])]

    def chat(_: httpx.Request) -> httpx.Response:
        draft_n = next(drafted)
        timings = llama_timings(20, draft_n=draft_n, draft_n_accepted=7 if draft_n else 0)
        return httpx.Response(200, content=openai_chat_stream(["a"] * 4, "llama-server", usage(20),
                                                               timings=timings), headers=SSE)

    routes = {"GET /metrics": counting(snapshots, reads), "POST /v1/chat/completions": chat}
    async with client_for("llama-server", "http://llama.test:8080", transport=serve(routes)) as client:
        figures = [(await client.generate(REQUEST)).figures for _ in range(8)]
    # Before each of the first three; none once three replies drafted nothing; the sixth drafts (its
    # reply's own figures, no before), so the counters stay on: read before the seventh (which drafts
    # nothing, so not after), and before and after the eighth.
    assert len(reads) == 3 + 1 + 2
    assert [f.verifications for f in figures[5:]] == [20 - 1 - 7, None, 3]
