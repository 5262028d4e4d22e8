import httpx
import pytest

from engines.clients import GenerationRequest, client_for
from engines.clients.base import Chunk, EngineFigures, Generation
from engines.errors import NoTokenCount
from runs.core.request_figures import engine_pooled, pooled_drafting, request_metrics, send
from tests.engines.stream_factories import SSE, openai_chat_stream, serve

pytestmark = pytest.mark.backend_free

REQUEST = GenerationRequest(model="m", messages=[{"role": "user", "content": "France?"}], max_tokens=9)


def make_generation(figures: EngineFigures, times=(0.5, 1.0, 2.5), sent=0.0, finished=2.6) -> Generation:
    chunks = [Chunk(t=t, text="x") for t in times]
    return Generation(sent_at=sent, chunks=chunks, finished_at=finished, figures=figures)


def test_it_counts_tokens_from_the_engine_not_from_chunks():
    # Three chunks, but speculative decoding packed 31 tokens into them.
    m = request_metrics(make_generation(EngineFigures(output_tokens=31)))
    assert m["ttft_s"] == 0.5
    assert m["decode_tps_client"] == 30 / 2.0
    assert m["e2e_s"] == 2.6


def test_it_excludes_cached_tokens_from_prefill_speed():
    figures = EngineFigures(output_tokens=2, prompt_tokens=1000, cached_tokens=800, prompt_s=0.5)
    assert request_metrics(make_generation(figures))["prefill_tps"] == 400.0


def test_it_derives_acceptance_and_tokens_per_verification():
    figures = EngineFigures(output_tokens=50, draft_tokens=80, accepted_tokens=40, verifications=10)
    m = request_metrics(make_generation(figures))
    assert m["acceptance_rate"] == 0.5
    assert m["tokens_per_verification"] == 5.0


def test_it_leaves_figures_the_engine_does_not_expose_empty():
    m = request_metrics(make_generation(EngineFigures(output_tokens=1)))
    assert m["decode_tps_client"] is None
    assert m["acceptance_rate"] is None
    assert m["tokens_per_verification"] is None
    assert m["prefill_tps"] is None


def drafting_row(accepted: int, drafted: int, verifications: int | None) -> dict:
    return {"accepted_tokens": accepted, "draft_tokens": drafted, "verifications": verifications,
            "acceptance_rate": accepted / drafted,
            "tokens_per_verification": (accepted + verifications) / verifications if verifications else None}


def test_it_pools_acceptance_over_the_requests_instead_of_taking_the_median_of_their_ratios():
    # A short answer that accepted everything beside two long ones that accepted little: the
    # median of the ratios (0.9) is twice the pooled figure the engine would count.
    rows = [drafting_row(9, 10, 3), drafting_row(90, 100, 30), drafting_row(60, 200, 70),
            drafting_row(40, 200, 80), {"draft_tokens": None, "accepted_tokens": None}]
    pooled = pooled_drafting(rows)
    assert pooled["acceptance_rate"]["pooled"] == pytest.approx(199 / 510)
    assert pooled["tokens_per_verification"]["pooled"] == pytest.approx((199 + 183) / 183)
    assert pooled["acceptance_rate"] | {"pooled": 0} == {
        "pooled": 0, "accepted": 199, "drafted": 510, "verifications": 183, "requests": 4,
        "source": "requests"}
    assert pooled["acceptance_rate_per_request"]["median"] == pytest.approx((0.9 + 0.3) / 2)
    assert pooled["acceptance_rate_per_request"]["n"] == 4


def test_it_has_no_pooled_figure_without_drafts_and_no_tokens_per_verification_without_verifications():
    assert pooled_drafting([{"draft_tokens": 0, "accepted_tokens": 0}]) == {
        "acceptance_rate": None, "tokens_per_verification": None,
        "acceptance_rate_per_request": None, "tokens_per_verification_per_request": None}
    pooled = pooled_drafting([drafting_row(5, 10, 4), drafting_row(5, 10, None)])
    assert pooled["acceptance_rate"]["pooled"] == 0.5
    assert pooled["tokens_per_verification"] is None


def test_it_takes_the_engines_counters_as_the_pooled_figure_where_it_counted_drafts():
    counted = engine_pooled({"drafts": 285, "draft_tokens": 1095, "accepted": 843})
    assert counted["acceptance_rate"]["pooled"] == pytest.approx(0.770, abs=5e-4)
    assert counted["tokens_per_verification"]["pooled"] == pytest.approx(3.96, abs=5e-3)
    assert counted["acceptance_rate"]["source"] == "engine"
    assert engine_pooled({"drafts": 0, "draft_tokens": 0, "accepted": 0}) == {}
    assert engine_pooled(None) == {}


def thinking_generation(reasoning_tokens: int | None) -> Generation:
    # Reasoning at 0.5 and 1.0, the answer at 1.5 and 2.5; 21 tokens in all.
    chunks = [Chunk(0.5, "hm", True), Chunk(1.0, "m", True), Chunk(1.5, "Pa"), Chunk(2.5, "ris")]
    figures = EngineFigures(output_tokens=21, reasoning_tokens=reasoning_tokens)
    figures.reasoning_tokens_source = "engine" if reasoning_tokens is not None else "unknown"
    return Generation(sent_at=0.0, chunks=chunks, finished_at=2.6, figures=figures)


def test_it_times_reasoning_and_answer_apart_and_decodes_over_both():
    m = request_metrics(thinking_generation(reasoning_tokens=15))
    assert (m["ttft_s"], m["ttfr_s"], m["ttfo_s"]) == (0.5, 0.5, 1.5)
    assert (m["reasoning_tokens"], m["answer_tokens"]) == (15, 6)
    assert m["decode_tps_client"] == 20 / 2.0  # every generated token, from the first reasoning one
    assert m["decode_tps_answer"] == 5 / 1.0
    assert m["reasoning_tokens_source"] == "engine"


def test_it_leaves_the_answer_figures_empty_when_the_reasoning_count_is_unknown():
    m = request_metrics(thinking_generation(reasoning_tokens=None))
    assert (m["answer_tokens"], m["decode_tps_answer"]) == (None, None)
    assert m["ttfo_s"] == 1.5


def _engine_without_usage(tokenize):
    def chat(_: httpx.Request) -> httpx.Response:
        # Neither usage nor timings: what a proxy that drops them passes on.
        body = openai_chat_stream(["Par", "is is", " the capital"], "llama-server")
        return httpx.Response(200, content=body, headers=SSE)

    routes = {"POST /v1/chat/completions": chat, "POST /tokenize": tokenize}
    return client_for("llama-server", "http://llama.test:8080", transport=serve(routes))


async def test_it_counts_the_tokens_of_a_reply_without_usage_with_the_engines_tokenizer():
    asked: list[bytes] = []

    def tokenize(request: httpx.Request) -> httpx.Response:
        asked.append(request.content)
        return httpx.Response(200, json={"tokens": [11, 12, 13, 14, 15]})

    async with _engine_without_usage(tokenize) as client:
        gen = await send(client, REQUEST, "request 1 of 1")
    assert (gen.figures.output_tokens, gen.figures.output_tokens_source) == (5, "tokenizer")
    assert b"Paris is the capital" in asked[0]
    assert request_metrics(gen)["output_tokens_source"] == "tokenizer"


async def test_it_refuses_a_reply_without_usage_when_the_engine_cannot_count_either():
    async with _engine_without_usage(lambda _: httpx.Response(404)) as client:
        with pytest.raises(NoTokenCount, match=r"request 1 of 1: .* has no tokenizer endpoint"):
            await send(client, REQUEST, "request 1 of 1")
