import pytest

from engines.clients.base import Chunk, EngineFigures, Generation
from runs.core.metrics import request_metrics

pytestmark = pytest.mark.backend_free


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
