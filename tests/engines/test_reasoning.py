"""Reasoning ("thinking") streams of each engine, recorded in its wire format, through the clients.

Each body is sent one event per client clock tick (tick 0 sends nothing), so every figure below
is worked out by hand from the tick its first and last tokens arrive on.
"""

from __future__ import annotations

import json

import httpx
import pytest

from engines.clients import GenerationRequest, base
from engines.clients.base import Chunk, Generation
from engines.clients.ollama import OllamaClient
from engines.clients.openai import OpenAIClient
from engines.clients.reasoning import ThinkSplitter, split_unopened
from runs.core.request_figures import request_metrics
from tests.engines.stream_factories import (
    NDJSON,
    SSE,
    FakeClock,
    dribble,
    events,
    ollama_thinking_stream,
    openai_chat_stream,
    openai_reasoning_stream,
    serve,
    usage,
)

pytestmark = pytest.mark.backend_free

URL = "http://engine.test:8080"
REQUEST = GenerationRequest(model="qwen3-8b", messages=[{"role": "user", "content": "Capital?"}])
THOUGHTS, ANSWER = ["Let me", " think"], ["Paris", " is", " it."]


def tokenizer(count: int, seen: list[dict]) -> dict:
    """A POST /tokenize route that notes the body and answers `count` tokens, as llama-server does."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"tokens": list(range(count))})

    return {"POST /tokenize": answer}


async def generate(monkeypatch, client_type, body: bytes, flavour: str | None = None, **routes) -> Generation:
    clock = FakeClock()
    monkeypatch.setattr(base, "now", clock)
    path, headers = ("/api/chat", NDJSON) if client_type is OllamaClient else ("/v1/chat/completions", SSE)
    stream = httpx.Response(200, content=dribble([b"", *events(body)], clock), headers=headers)
    transport = serve({f"POST {path}": stream, **routes})
    client = OllamaClient(URL, transport=transport) if flavour is None else OpenAIClient(
        URL, transport=transport, flavour=flavour
    )
    async with client:
        return await client.generate(REQUEST)


# ticks: 1 role, 2-3 reasoning, 4-6 answer; 10 tokens, 6 of them reasoning.
OPENAI_FIGURES = {
    "ttft_s": 2.0, "ttfr_s": 2.0, "ttfo_s": 4.0, "reasoning_tokens": 6, "answer_tokens": 4,
    "decode_tps_client": 9 / (6 - 2), "decode_tps_answer": 3 / (6 - 4),
}


def reasoning_figures(m: dict) -> dict:
    return {key: m[key] for key in OPENAI_FIGURES}


@pytest.mark.parametrize(("flavour", "key", "sglang"), [
    ("vllm", "reasoning_content", False),
    ("vllm", "reasoning", False),  # newer vLLM's name
    ("sglang", "reasoning_content", True),  # SGLang's usage says reasoning_tokens itself
])
async def test_it_times_reasoning_deltas_and_takes_the_count_from_the_engines_usage(
    monkeypatch, flavour, key, sglang
):
    counted = usage(10, reasoning_tokens=6, sglang=sglang)
    body = openai_reasoning_stream(THOUGHTS, ANSWER, flavour, counted, key)
    gen = await generate(monkeypatch, OpenAIClient, body, flavour)
    assert (gen.text, gen.reasoning_text) == ("Paris is it.", "Let me think")
    m = request_metrics(gen)
    assert reasoning_figures(m) == OPENAI_FIGURES
    assert m["reasoning_tokens_source"] == "engine"


async def test_it_counts_llama_servers_reasoning_with_its_tokenizer(monkeypatch):
    seen: list[dict] = []
    body = openai_reasoning_stream(THOUGHTS, ANSWER, "llama-server", usage(10))
    gen = await generate(monkeypatch, OpenAIClient, body, "llama-server", **tokenizer(6, seen))
    assert seen[0]["content"] == "Let me think" and seen[0]["add_special"] is False
    m = request_metrics(gen)
    assert reasoning_figures(m) == OPENAI_FIGURES
    assert m["reasoning_tokens_source"] == "tokenizer"


async def test_it_asks_vllms_tokenizer_when_the_usage_has_no_reasoning_count(monkeypatch):
    seen: list[dict] = []

    def vllm_tokenize(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"count": 6, "max_model_len": 32768, "tokens": [1] * 6})

    body = openai_reasoning_stream(THOUGHTS, ANSWER, "vllm", usage(10, reasoning_tokens=0))
    gen = await generate(monkeypatch, OpenAIClient, body, "vllm", **{"POST /tokenize": vllm_tokenize})
    sent = (seen[0]["model"], seen[0]["prompt"], seen[0]["add_special_tokens"])
    assert sent == ("qwen3-8b", "Let me think", False)
    assert (gen.figures.reasoning_tokens, gen.figures.reasoning_tokens_source) == (6, "tokenizer")


async def test_it_splits_think_tags_out_of_the_content_even_when_a_tag_is_cut_across_chunks(monkeypatch):
    seen: list[dict] = []
    pieces = ["<th", "ink>\nLet me", " think</th", "ink>\n\nParis", " is it."]
    body = openai_chat_stream(pieces, "llama-server", usage(12))
    gen = await generate(monkeypatch, OpenAIClient, body, "llama-server", **tokenizer(8, seen))
    assert gen.reasoning_text == "<think>\nLet me think</think>"
    assert gen.text == "\n\nParis is it."
    assert seen[0]["content"] == "<think>\nLet me think</think>"
    # ticks: 2 "<th" (held until tick 3 shows it is the tag), 5 "</think>" and the answer, 6 the end.
    m = request_metrics(gen)
    assert (m["ttft_s"], m["ttfr_s"], m["ttfo_s"]) == (2.0, 2.0, 5.0)
    assert (m["reasoning_tokens"], m["answer_tokens"]) == (8, 4)
    assert m["decode_tps_client"] == 11 / (6 - 2)
    assert m["decode_tps_answer"] == 3 / (6 - 5)


async def test_it_times_ollamas_thinking_and_says_its_count_is_unknown(monkeypatch):
    body = ollama_thinking_stream(THOUGHTS, ANSWER, eval_count=10)
    gen = await generate(monkeypatch, OllamaClient, body)
    assert (gen.text, gen.reasoning_text) == ("Paris is it.", "Let me think")
    m = request_metrics(gen)
    # ticks: 1-2 thinking, 3-5 answer, 6 the final line; eval_count counts the thinking too.
    assert (m["ttft_s"], m["ttfr_s"], m["ttfo_s"]) == (1.0, 1.0, 3.0)
    assert m["decode_tps_client"] == 9 / (5 - 1)
    assert (m["reasoning_tokens"], m["answer_tokens"], m["decode_tps_answer"]) == (None, None, None)
    assert m["reasoning_tokens_source"] == "unknown"


async def test_it_gives_ttfo_equal_to_ttft_and_no_reasoning_for_a_plain_answer(monkeypatch):
    gen = await generate(monkeypatch, OpenAIClient, openai_chat_stream(ANSWER, "vllm", usage(3)), "vllm")
    m = request_metrics(gen)
    assert m["ttfo_s"] == m["ttft_s"] == 2.0
    assert (m["ttfr_s"], m["reasoning_tokens"], m["answer_tokens"]) == (None, 0, 3)
    assert m["reasoning_tokens_source"] == "stream"


def test_it_passes_content_without_a_leading_think_tag_through_at_once():
    splitter = ThinkSplitter()
    assert splitter.feed(1.0, "Paris <think> is") == [Chunk(1.0, "Paris <think> is")]
    assert splitter.feed(2.0, "</think>") == [Chunk(2.0, "</think>")]


def test_it_holds_a_possible_tag_only_until_it_is_told_apart():
    splitter = ThinkSplitter()
    assert splitter.feed(1.0, "\n<") == []
    assert splitter.feed(2.0, "b>bold") == [Chunk(1.0, "\n<b>bold")]


def test_it_keeps_an_unclosed_reasoning_as_reasoning_at_the_end():
    splitter = ThinkSplitter()
    opened = [Chunk(1.0, "<think>", True), Chunk(1.0, "cut off", True)]
    assert splitter.feed(1.0, "<think>cut off</") == opened
    assert splitter.finish(2.0) == [Chunk(1.0, "</", True)]


async def test_it_takes_the_content_before_a_closing_tag_the_template_opened_as_reasoning(monkeypatch):
    # The chat template put "<think>" in the prompt: the stream has only "</think>", cut in two.
    seen: list[dict] = []
    pieces = ["Let me", " think</th", "ink>\n\nParis", " is it."]
    body = openai_chat_stream(pieces, "llama-server", usage(9))
    gen = await generate(monkeypatch, OpenAIClient, body, "llama-server", **tokenizer(5, seen))
    assert (gen.reasoning_text, gen.text) == ("Let me think</think>", "\n\nParis is it.")
    # ticks: 2-3 reasoning, 4 the tag's end and the answer's start, 5 the answer's end.
    m = request_metrics(gen)
    assert (m["ttft_s"], m["ttfr_s"], m["ttfo_s"]) == (2.0, 2.0, 4.0)
    assert (m["reasoning_tokens"], m["answer_tokens"], m["reasoning_tokens_source"]) == (5, 4, "tokenizer")
    assert m["decode_tps_answer"] == 3 / (5 - 4)


def test_it_leaves_an_answer_that_only_mentions_the_tags_as_it_is():
    chunks = [Chunk(1.0, "Use <think> then"), Chunk(2.0, " </think>.")]
    assert split_unopened(chunks) == chunks
