"""OllamaClient against recorded /api/chat NDJSON answers and the /api endpoints it reads."""

from __future__ import annotations

import json

import httpx
import pytest

from engines.clients import (
    Chunk,
    EngineError,
    EngineFigures,
    EngineHTTPError,
    GenerationRequest,
    base,
    client_for,
)
from engines.clients.ollama import OllamaClient, chat_body
from engines.clients.openai import OpenAIClient
from tests.engines.stream_factories import (
    NDJSON,
    FakeClock,
    closed_port,
    dribble,
    fail_after,
    ndjson,
    ollama_chat_stream,
    ollama_chunk,
    serve,
)

pytestmark = pytest.mark.backend_free

URL = "http://ollama.test:11434"
REQUEST = GenerationRequest(model="qwen3:8b", messages=[{"role": "user", "content": "Hi"}], max_tokens=64)


def chat(body: bytes | object, status: int = 200, headers: dict[str, str] = NDJSON) -> OllamaClient:
    response = httpx.Response(status, content=body, headers=headers)
    return OllamaClient(URL, transport=serve({"POST /api/chat": response}))


async def collect(client: OllamaClient, request: GenerationRequest = REQUEST) -> list[Chunk | EngineFigures]:
    async with client:
        return [item async for item in client.stream(request)]


async def test_it_streams_content_chunks_then_the_engines_figures():
    body = ollama_chat_stream(
        ["Hel", "lo", "!"],
        eval_count=3,
        eval_duration=250_000_000,
        prompt_eval_count=26,
        prompt_eval_duration=130_000_000,
    )
    *chunks, figures = await collect(chat(body))
    assert [c.text for c in chunks] == ["Hel", "lo", "!"]
    assert figures == EngineFigures(
        output_tokens=3,
        prompt_tokens=26,
        cached_tokens=None,
        prompt_s=0.13,
        decode_s=0.25,
        decode_tps=12.0,
        finish_reason="stop",
    )


async def test_it_takes_output_tokens_from_eval_count_not_from_chunks():
    # Speculative decoding: one streamed chunk can carry many tokens.
    body = ollama_chat_stream(["def add(a, b):\n    return a + b\n"], eval_count=14)
    *chunks, figures = await collect(chat(body))
    assert len(chunks) == 1
    assert figures.output_tokens == 14


async def test_it_sends_fixed_sampling_and_leaves_thinking_to_the_model_by_default():
    seen: list[httpx.Request] = []
    response = httpx.Response(200, content=ollama_chat_stream(["ok"]), headers=NDJSON)
    client = OllamaClient(URL, transport=serve({"POST /api/chat": response}, seen))
    request = GenerationRequest(
        model="qwen3:8b",
        messages=[{"role": "user", "content": "Hi"}],
        max_tokens=64,
        temperature=0.0,
        top_p=0.9,
        top_k=40,
        seed=7,
    )
    await collect(client, request)
    sent = json.loads(seen[0].content)
    assert sent["stream"] is True
    assert "think" not in sent
    assert sent["messages"] == [{"role": "user", "content": "Hi"}]
    assert sent["options"] == {"temperature": 0.0, "top_p": 0.9, "top_k": 40, "seed": 7, "num_predict": 64}


async def test_it_leaves_unset_sampling_out_and_lays_extra_over_the_body():
    seen: list[httpx.Request] = []
    response = httpx.Response(200, content=ollama_chat_stream(["ok"]), headers=NDJSON)
    client = OllamaClient(URL, transport=serve({"POST /api/chat": response}, seen))
    request = GenerationRequest(
        model="qwen3:8b", messages=[], seed=None, extra={"keep_alive": "10m", "options": {"num_ctx": 8192}}
    )
    await collect(client, request)
    sent = json.loads(seen[0].content)
    assert sent["keep_alive"] == "10m"
    assert sent["options"] == {"temperature": 0.0, "num_predict": 256, "num_ctx": 8192}


async def test_it_stamps_each_chunk_when_its_line_arrives(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(base, "now", clock)
    first, second, final = ollama_chat_stream(["a", "b"]).splitlines(keepends=True)
    # The second line arrives in two pieces: it is stamped when its newline does.
    pieces = [first, second[:10], second[10:], final]
    *chunks, _ = await collect(chat(dribble(pieces, clock)))
    assert chunks == [Chunk(0.0, "a"), Chunk(2.0, "b")]


async def test_it_collects_a_generation():
    client = chat(ollama_chat_stream(["Hel", "lo"], eval_count=2))
    async with client:
        generation = await client.generate(REQUEST)
    assert generation.text == "Hello"
    assert generation.figures.output_tokens == 2
    assert generation.sent_at <= generation.first_token_at <= generation.last_token_at
    assert generation.last_token_at <= generation.finished_at


async def test_it_skips_blank_lines():
    body = ollama_chat_stream(["a"]).replace(b"\n", b"\n\n")
    *chunks, figures = await collect(chat(body))
    assert [c.text for c in chunks] == ["a"]
    assert figures.finish_reason == "stop"


async def test_it_raises_the_error_line_the_engine_sends_mid_stream():
    body = ndjson(ollama_chunk("a"), {"error": "an error was encountered while running the model"})
    with pytest.raises(EngineError, match="an error was encountered while running the model"):
        await collect(chat(body))


async def test_it_raises_when_the_stream_ends_before_done():
    with pytest.raises(EngineError, match="engine stopped mid-answer after 2 chunks"):
        await collect(chat(ollama_chat_stream(["a", "b"], final=False)))


async def test_it_raises_on_a_malformed_line():
    body = ndjson(ollama_chunk("a")) + b'{"model":"qwen3:8b","message":{"role"\n'
    with pytest.raises(EngineError, match=r'malformed NDJSON line: \{"model":"qwen3:8b"'):
        await collect(chat(body))


async def test_it_raises_on_bytes_that_are_not_utf8():
    body = ndjson(ollama_chunk("a")) + b'{"message":{"content":"\xff\xfe"},"done":false}\n'
    with pytest.raises(EngineError, match="not UTF-8"):
        await collect(chat(body))


async def test_it_raises_on_an_http_error_with_html_stripped():
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
    with pytest.raises(EngineHTTPError) as caught:
        await collect(chat(page, status=502, headers={"content-type": "text/html"}))
    message = str(caught.value)
    assert caught.value.status == 502
    assert "HTTP 502" in message and "502 Bad Gateway Bad Gateway" in message
    assert "<" not in message


async def test_it_cuts_a_long_error_body_to_200_characters():
    with pytest.raises(EngineError) as caught:
        await collect(chat(json.dumps({"error": "x" * 1000}).encode(), status=404))
    assert "HTTP 404" in str(caught.value)
    assert len(str(caught.value)) < 300


async def test_it_raises_when_the_engine_is_unreachable():
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(EngineError, match=f"cannot reach {url}"):
        await collect(OllamaClient(url))


async def test_it_raises_on_a_read_timeout_mid_stream():
    body = fail_after(ndjson(ollama_chunk("a")), httpx.ReadTimeout("timed out"))
    with pytest.raises(EngineError, match="timed out"):
        await collect(chat(body))


async def test_it_raises_on_a_connection_dropped_mid_stream():
    body = fail_after(ndjson(ollama_chunk("a")), httpx.RemoteProtocolError("peer closed connection"))
    with pytest.raises(EngineError, match="peer closed connection"):
        await collect(chat(body))


async def test_it_reads_the_version():
    client = OllamaClient(
        URL, transport=serve({"GET /api/version": httpx.Response(200, json={"version": "0.33.0"})})
    )
    async with client:
        assert await client.version() == "0.33.0"


async def test_it_reads_model_info_with_the_digest_from_tags():
    show = {
        "details": {
            "format": "gguf",
            "family": "qwen3",
            "parameter_size": "8.2B",
            "quantization_level": "Q4_K_M",
        },
        "model_info": {
            "general.architecture": "qwen3",
            "general.parameter_count": 8190735360,
            "qwen3.context_length": 40960,
        },
    }
    tags = {
        "models": [
            {"name": "llama3.2:3b", "model": "llama3.2:3b", "digest": "a80c4f17acd5"},
            {"name": "qwen3:latest", "model": "qwen3:latest", "digest": "500a1f067a9f"},
        ]
    }
    routes = {
        "POST /api/show": httpx.Response(200, json=show),
        "GET /api/tags": httpx.Response(200, json=tags),
    }
    async with OllamaClient(URL, transport=serve(routes)) as client:
        info = await client.model_info("qwen3")
    assert info["id"] == "qwen3"
    assert info["digest"] == "500a1f067a9f"
    assert (info["quantization"], info["parameter_size"], info["family"]) == ("Q4_K_M", "8.2B", "qwen3")
    assert info["context_length"] == 40960


async def test_it_raises_when_asked_about_a_model_it_does_not_have():
    routes = {"POST /api/show": httpx.Response(404, json={"error": "model 'nope' not found"})}
    async with OllamaClient(URL, transport=serve(routes)) as client:
        with pytest.raises(EngineError, match="model 'nope' not found"):
            await client.model_info("nope")


def test_it_picks_the_client_for_each_kind():
    assert isinstance(client_for("ollama", URL), OllamaClient)
    for kind in ("llama-server", "sglang", "vllm"):
        client = client_for(kind, URL, "key", 5.0, transport=serve({}))
        assert isinstance(client, OpenAIClient) and client.flavour == kind
        assert client.http.headers["Authorization"] == "Bearer key"


def test_it_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown engine kind"):
        client_for("tgi", URL)


@pytest.mark.parametrize(("thinking", "effort", "think"), [
    (True, None, True),
    (False, None, False),
    (None, "high", "high"),  # gpt-oss takes a level
    (False, "high", False),  # off wins over a level
])
def test_it_renders_think_from_thinking_and_reasoning_effort(thinking, effort, think):
    request = GenerationRequest(model="qwen3:8b", messages=[], thinking=thinking, reasoning_effort=effort)
    assert chat_body(request)["think"] == think
