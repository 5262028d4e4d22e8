"""OpenAIClient against recorded /v1/chat/completions SSE answers of llama-server, vLLM and SGLang."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from engines.clients import Chunk, EngineError, EngineFigures, EngineHTTPError, GenerationRequest, base
from engines.clients import openai as openai_module
from engines.clients.openai import OpenAIClient
from tests.engines.stream_factories import (
    SSE,
    FakeClock,
    closed_port,
    delta,
    dribble,
    fail_after,
    llama_timings,
    openai_chat_stream,
    openai_chunk,
    serve,
    sse,
    usage,
)

pytestmark = pytest.mark.backend_free

URL = "http://engine.test:8080"
REQUEST = GenerationRequest(model="qwen3-8b", messages=[{"role": "user", "content": "Hi"}], max_tokens=64)
FLAVOURS = ("llama-server", "sglang", "vllm")


def chat(body: object, flavour: str = "vllm", status: int = 200, seen: list | None = None) -> OpenAIClient:
    response = httpx.Response(status, content=body, headers=SSE)
    return OpenAIClient(URL, transport=serve({"POST /v1/chat/completions": response}, seen), flavour=flavour)


async def collect(client: OpenAIClient, request: GenerationRequest = REQUEST) -> list[Chunk | EngineFigures]:
    async with client:
        return [item async for item in client.stream(request)]


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_it_streams_content_chunks_then_usage_figures(flavour):
    body = openai_chat_stream(["Hel", "lo", "!"], flavour, usage(3, prompt_tokens=26, cached_tokens=16))
    *chunks, figures = await collect(chat(body, flavour))
    assert [c.text for c in chunks] == ["Hel", "lo", "!"]
    assert figures == EngineFigures(output_tokens=3, prompt_tokens=26, cached_tokens=16, finish_reason="stop")


async def test_it_takes_output_tokens_from_usage_not_from_chunks():
    # Speculative decoding: one streamed chunk can carry many tokens.
    body = openai_chat_stream(['{"name": "read_file", "path": "a.py"}'], "vllm", usage(17))
    *chunks, figures = await collect(chat(body))
    assert len(chunks) == 1
    assert figures.output_tokens == 17


async def test_it_leaves_cached_tokens_empty_when_the_engine_does_not_report_them():
    *_, figures = await collect(chat(openai_chat_stream(["a"], "vllm", usage(1))))
    assert figures.cached_tokens is None
    assert figures.finish_reason == "stop"


async def test_it_reads_llama_server_timings_and_estimates_verifications():
    timings = llama_timings(predicted_n=41, prompt_n=10, cache_n=16, draft_n=48, draft_n_accepted=30)
    body = openai_chat_stream(
        ["a", "b"], "llama-server", usage(41, prompt_tokens=26, cached_tokens=16), timings
    )
    *_, figures = await collect(chat(body, "llama-server"))
    assert figures == EngineFigures(
        output_tokens=41,
        prompt_tokens=26,
        cached_tokens=16,
        prompt_s=0.04,
        decode_s=0.5,
        decode_tps=82.0,
        draft_tokens=48,
        accepted_tokens=30,
        verifications=10,
        finish_reason="stop",
    )


async def test_it_leaves_draft_figures_empty_when_nothing_was_drafted():
    body = openai_chat_stream(["a"], "llama-server", usage(5), llama_timings(predicted_n=5))
    *_, figures = await collect(chat(body, "llama-server"))
    assert (figures.draft_tokens, figures.accepted_tokens, figures.verifications) == (None, None, None)
    assert figures.decode_tps == 10.0


async def test_it_counts_from_timings_when_usage_is_absent():
    body = openai_chat_stream(
        ["a", "b"], "llama-server", None, llama_timings(predicted_n=9, prompt_n=4, cache_n=6)
    )
    *_, figures = await collect(chat(body, "llama-server"))
    assert (figures.output_tokens, figures.prompt_tokens, figures.cached_tokens) == (9, 10, 6)


async def test_it_keeps_the_last_usage_when_every_chunk_carries_one():
    events = [
        openai_chunk("vllm", [delta("a")], usage=usage(1)),
        openai_chunk("vllm", [delta("b", "length")], usage=usage(2)),
        openai_chunk("vllm", [], usage=usage(2)),
        "[DONE]",
    ]
    *chunks, figures = await collect(chat(sse(*events)))
    assert [c.text for c in chunks] == ["a", "b"]
    assert (figures.output_tokens, figures.finish_reason) == (2, "length")


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_it_sends_streaming_usage_and_fixed_sampling(flavour):
    seen: list[httpx.Request] = []
    await collect(chat(openai_chat_stream(["a"], flavour, usage(1)), flavour, seen=seen))
    sent = json.loads(seen[0].content)
    assert sent == {
        "model": "qwen3-8b",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 64,
        "temperature": 0.0,
        "seed": 0,
        **({"cache_prompt": True} if flavour == "llama-server" else {}),
        **({"return_spec_tokens_details": True} if flavour == "sglang" else {}),
    }


async def test_it_sends_top_p_and_top_k_when_set_and_lays_extra_over_the_body():
    seen: list[httpx.Request] = []
    request = GenerationRequest(
        model="m",
        messages=[],
        top_p=0.8,
        top_k=20,
        seed=None,
        extra={
            "chat_template_kwargs": {"enable_thinking": False},
            "stream_options": {"continuous_usage_stats": True},
        },
    )
    await collect(chat(openai_chat_stream(["a"], "sglang", usage(1)), "sglang", seen=seen), request)
    sent = json.loads(seen[0].content)
    assert (sent["top_p"], sent["top_k"], "seed" in sent) == (0.8, 20, False)
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}


async def test_it_tolerates_comments_blank_lines_and_crlf():
    body = openai_chat_stream(["a", "b"], "llama-server", usage(2), newline="\r\n")
    body = b":\r\n\r\nevent: message\r\nid: 1\r\n" + body.replace(b"data: {", b": ping\r\n\r\ndata:{", 1)
    *chunks, figures = await collect(chat(body, "llama-server"))
    assert [c.text for c in chunks] == ["a", "b"]
    assert figures.output_tokens == 2


async def test_it_stamps_each_chunk_when_its_event_arrives(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(base, "now", clock)
    lines = openai_chat_stream(["a", "b"], "vllm", usage(2)).splitlines(keepends=True)
    # lines: role, blank, "a", blank, "b", blank, finish, blank, usage, blank, [DONE], blank
    *chunks, _ = await collect(chat(dribble(lines, clock)))
    assert chunks == [Chunk(2.0, "a"), Chunk(4.0, "b")]


async def test_it_stamps_a_chunk_with_the_read_of_its_last_piece_not_its_parse(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(base, "now", clock)
    parse = openai_module.load_json_object

    def slow_parse(text: str, what: str) -> dict:
        clock.t += 100.0  # parsing takes "100 s": none of it may show in a chunk's time
        return parse(text, what)

    monkeypatch.setattr(openai_module, "load_json_object", slow_parse)
    role, blank, a, _, b, *rest = openai_chat_stream(["a", "b"], "vllm", usage(2)).splitlines(keepends=True)
    # "a" comes in two network pieces (read at clock 2 and 3); the second also carries all of "b".
    pieces = [role, blank, a[:12], a[12:] + blank + b, *rest]
    chunks = [item async for item in _stream(chat(_read_at(pieces, clock)))]
    assert chunks[:2] == [Chunk(3.0, "a"), Chunk(3.0, "b")]


async def _read_at(pieces: list[bytes], clock: FakeClock) -> AsyncIterator[bytes]:
    """Piece i is read at clock i, whatever parsing advanced the clock to meanwhile."""
    for i, piece in enumerate(pieces):
        clock.t = float(i)
        yield piece


async def _stream(client: OpenAIClient) -> AsyncIterator[Chunk | EngineFigures]:
    async with client:
        async for item in client.stream(REQUEST):
            yield item


async def test_it_raises_when_the_stream_ends_without_done():
    with pytest.raises(EngineError, match="engine stopped mid-answer after 2 chunks"):
        await collect(chat(openai_chat_stream(["a", "b"], "vllm", usage(2), done=False)))


async def test_it_raises_when_the_stream_ends_without_a_finish_reason():
    with pytest.raises(EngineError, match="engine stopped mid-answer after 1 chunks"):
        await collect(chat(openai_chat_stream(["a"], "vllm", None, finish_reason=None)))


async def test_it_raises_on_a_malformed_event():
    body = sse(openai_chunk("vllm", [delta("a")])) + b'data: {"id":"chatcmpl-7f3a","choices":[{"ind\n\n'
    with pytest.raises(EngineError, match=r'malformed SSE data line: \{"id":"chatcmpl-7f3a"'):
        await collect(chat(body))


async def test_it_raises_on_a_line_that_is_not_sse():
    body = json.dumps(openai_chunk("vllm", [delta("a")])).encode() + b"\n"
    with pytest.raises(EngineError, match="malformed SSE line"):
        await collect(chat(body))


async def test_it_raises_on_bytes_that_are_not_utf8():
    body = (
        sse(openai_chunk("vllm", [delta("a")])) + b'data: {"choices":[{"delta":{"content":"\xc3\x28"}}]}\n\n'
    )
    with pytest.raises(EngineError, match="not UTF-8"):
        await collect(chat(body))


async def test_it_raises_on_an_http_error_with_html_stripped():
    page = b"<html><body><h1>500 Internal Server Error</h1><p>Only one system message</p></body></html>"
    with pytest.raises(EngineHTTPError) as caught:
        await collect(chat(page, status=500))
    assert "HTTP 500" in str(caught.value) and "Only one system message" in str(caught.value)
    assert "<" not in str(caught.value)


@pytest.mark.parametrize(
    "event",
    [
        b'data: {"error": {"code": 500, "message": "context shift is disabled", "type": "server_error"}}\n\n',
        b'error: {"code": 500, "message": "context shift is disabled", "type": "server_error"}\n\n',
        b'data: {"object": "error", "message": "context shift is disabled", "type": "BadRequestError"}\n\n',
    ],
)
async def test_it_raises_the_error_the_engine_reports_mid_stream(event):
    with pytest.raises(EngineError, match="context shift is disabled"):
        await collect(chat(sse(openai_chunk("llama-server", [delta("a")])) + event, "llama-server"))


async def test_it_raises_when_the_engine_is_unreachable():
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(EngineError, match=f"cannot reach {url}"):
        await collect(OpenAIClient(url, flavour="vllm"))


async def test_it_raises_on_a_read_timeout():
    body = fail_after(sse(openai_chunk("vllm", [delta("a")])), httpx.ReadTimeout("timed out"))
    with pytest.raises(EngineError, match="timed out"):
        await collect(chat(body))


@pytest.mark.parametrize(
    ("flavour", "path", "answer", "version"),
    [
        ("llama-server", "/props", {"build_info": "b10587-1a2b3c4d", "total_slots": 4}, "b10587-1a2b3c4d"),
        ("vllm", "/version", {"version": "0.21.0"}, "0.21.0"),
        ("sglang", "/server_info", {"version": "0.6.1", "tp_size": 1}, "0.6.1"),
        ("sglang", "/get_server_info", {"version": "0.5.9"}, "0.5.9"),
    ],
)
async def test_it_reads_the_version(flavour, path, answer, version):
    routes = {f"GET {path}": httpx.Response(200, json=answer)}
    async with OpenAIClient(URL, transport=serve(routes), flavour=flavour) as client:
        assert await client.version() == version


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_it_says_none_when_the_engine_has_no_version_endpoint(flavour):
    async with OpenAIClient(URL, transport=serve({}), flavour=flavour) as client:
        assert await client.version() is None


async def test_it_reads_model_info_for_the_matching_model():
    models = {
        "object": "list",
        "data": [
            {"id": "draft", "object": "model", "owned_by": "vllm", "root": "/m/draft", "max_model_len": 4096},
            {
                "id": "qwen3-8b",
                "object": "model",
                "owned_by": "vllm",
                "root": "/m/qwen3",
                "max_model_len": 32768,
            },
        ],
    }
    async with OpenAIClient(
        URL, transport=serve({"GET /v1/models": httpx.Response(200, json=models)}), flavour="vllm"
    ) as client:
        info = await client.model_info("qwen3-8b")
    assert (info["id"], info["digest"], info["max_model_len"], info["root"]) == (
        "qwen3-8b",
        None,
        32768,
        "/m/qwen3",
    )


async def test_it_falls_back_to_the_first_model():
    models = {
        "object": "list",
        "data": [
            {
                "id": "qwen3-8b-q4_k_m.gguf",
                "object": "model",
                "owned_by": "llamacpp",
                "meta": {"n_params": 8190735360, "n_ctx_train": 40960, "size": 5027783488},
            }
        ],
    }
    async with OpenAIClient(
        URL, transport=serve({"GET /v1/models": httpx.Response(200, json=models)}), flavour="llama-server"
    ) as client:
        info = await client.model_info("anything")
    assert (info["id"], info["n_params"], info["n_ctx_train"]) == ("qwen3-8b-q4_k_m.gguf", 8190735360, 40960)


async def test_it_raises_when_no_model_is_listed():
    routes = {"GET /v1/models": httpx.Response(200, json={"object": "list", "data": []})}
    async with OpenAIClient(URL, transport=serve(routes), flavour="sglang") as client:
        with pytest.raises(EngineError, match="lists no models"):
            await client.model_info("qwen3-8b")


async def test_it_raises_on_a_malformed_json_answer():
    routes = {"GET /v1/models": httpx.Response(200, content=b"<html>hello</html>")}
    async with OpenAIClient(URL, transport=serve(routes), flavour="vllm") as client:
        with pytest.raises(EngineError, match="malformed answer from"):
            await client.model_info("qwen3-8b")


def test_it_rejects_an_unknown_flavour():
    with pytest.raises(ValueError, match="unknown OpenAI-compatible engine"):
        OpenAIClient(URL, flavour="tgi")


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_it_renders_thinking_and_reasoning_effort_only_when_set(flavour):
    seen: list[httpx.Request] = []
    await collect(chat(openai_chat_stream(["a"], flavour, usage(1)), flavour, seen=seen))
    plain = json.loads(seen[0].content)
    assert "chat_template_kwargs" not in plain and "reasoning_effort" not in plain
    off = GenerationRequest(model="qwen3-8b", messages=[], thinking=False, reasoning_effort="low")
    sent = OpenAIClient(URL, flavour=flavour).chat_body(off)
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent["reasoning_effort"] == "low"


def test_it_lays_the_requests_extra_over_the_thinking_fields():
    request = GenerationRequest(
        model="qwen3-8b", messages=[], thinking=True, extra={"chat_template_kwargs": {"custom": 1}}
    )
    sent = OpenAIClient(URL, flavour="vllm").chat_body(request)
    assert sent["chat_template_kwargs"] == {"enable_thinking": True, "custom": 1}
