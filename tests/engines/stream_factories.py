"""Recorded engine answers built in each engine's wire format, and transports serving them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from tests.real_engine import free_port

NDJSON = {"content-type": "application/x-ndjson"}
SSE = {"content-type": "text/event-stream"}
Route = httpx.Response | Callable[[httpx.Request], httpx.Response]


def ndjson(*objects: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


def ollama_chunk(text: str, model: str = "qwen3:8b") -> dict[str, Any]:
    return {
        "model": model,
        "created_at": "2026-08-04T08:52:19.385406455Z",
        "message": {"role": "assistant", "content": text},
        "done": False,
    }


def ollama_final(
    eval_count: int = 3,
    eval_duration: int = 250_000_000,
    prompt_eval_count: int = 26,
    prompt_eval_duration: int = 130_000_000,
    done_reason: str = "stop",
) -> dict[str, Any]:
    return {
        **ollama_chunk(""),
        "done": True,
        "done_reason": done_reason,
        "total_duration": 4_883_583_458,
        "load_duration": 1_334_875,
        "prompt_eval_count": prompt_eval_count,
        "prompt_eval_duration": prompt_eval_duration,
        "eval_count": eval_count,
        "eval_duration": eval_duration,
    }


def ollama_chat_stream(pieces: list[str], final: bool = True, **figures: Any) -> bytes:
    """An /api/chat NDJSON answer; `figures` go to the final line, `final=False` cuts it off."""
    lines = [ollama_chunk(p) for p in pieces]
    return ndjson(*lines, *([ollama_final(**figures)] if final else []))


def sse(*payloads: dict[str, Any] | str, newline: str = "\n") -> bytes:
    """SSE events: dicts as JSON `data:` lines, strings sent as they are (e.g. "[DONE]")."""
    events = (f"data: {p if isinstance(p, str) else json.dumps(p)}{newline}{newline}" for p in payloads)
    return "".join(events).encode()


def openai_chunk(flavour: str, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One chat.completion.chunk with the fields each engine adds around the choices."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-7f3a",
        "object": "chat.completion.chunk",
        "created": 1785830000,
        "model": "qwen3-8b",
        "choices": choices,
    }
    if flavour == "llama-server":
        chunk["system_fingerprint"] = "b10587-1a2b3c4d"
    if flavour == "sglang":
        chunk["usage"] = None
    return {**chunk, **extra}


def delta(text: str | None, finish_reason: str | None = None, role: bool = False) -> dict[str, Any]:
    content: dict[str, Any] = {"role": "assistant"} if role else {}
    if text is not None or role:
        content["content"] = text
    return {"index": 0, "delta": content, "logprobs": None, "finish_reason": finish_reason}


def usage(
    completion_tokens: int,
    prompt_tokens: int = 26,
    cached_tokens: int | None = None,
    reasoning_tokens: int | None = None,
    sglang: bool = False,
) -> dict[str, Any]:
    """A usage object; reasoning_tokens as OpenAI's completion_tokens_details, or SGLang's own key."""
    body: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning_tokens is not None and sglang:
        body["reasoning_tokens"] = reasoning_tokens
    elif reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return body


def llama_timings(
    predicted_n: int, prompt_n: int = 10, cache_n: int = 16, draft_n: int = 0, draft_n_accepted: int = 0
) -> dict[str, Any]:
    """llama-server's `timings`, with draft fields only when something was drafted (as the server does)."""
    timings: dict[str, Any] = {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": 40.0,
        "prompt_per_token_ms": 40.0 / prompt_n,
        "prompt_per_second": prompt_n / 0.04,
        "predicted_n": predicted_n,
        "predicted_ms": 500.0,
        "predicted_per_token_ms": 500.0 / predicted_n,
        "predicted_per_second": predicted_n / 0.5,
    }
    if draft_n > 0:
        timings.update(draft_n=draft_n, draft_n_accepted=draft_n_accepted)
    return timings


def openai_chat_stream(
    pieces: list[str],
    flavour: str = "vllm",
    usage_body: dict[str, Any] | None = None,
    timings: dict[str, Any] | None = None,
    finish_reason: str | None = "stop",
    done: bool = True,
    newline: str = "\n",
) -> bytes:
    """A /v1/chat/completions SSE answer: role delta, content deltas, finish, usage (+timings), [DONE]."""
    events: list[dict[str, Any] | str] = [openai_chunk(flavour, [delta("", role=True)])]
    events += [openai_chunk(flavour, [delta(p)]) for p in pieces]
    if finish_reason:
        events.append(openai_chunk(flavour, [delta(None, finish_reason)]))
    tail: dict[str, Any] = {"usage": usage_body} if usage_body else {}
    if timings:
        tail["timings"] = timings  # llama-server attaches timings to the last chunk
    if tail:
        events.append(openai_chunk(flavour, [], **tail))
    return sse(*events, *(["[DONE]"] if done else []), newline=newline)


def ollama_thinking_stream(thoughts: list[str], pieces: list[str], **figures: Any) -> bytes:
    """An /api/chat answer of a thinking model: `message.thinking` lines, then content lines."""
    message = {"role": "assistant", "content": ""}
    thinking = [{**ollama_chunk(""), "message": {**message, "thinking": t}} for t in thoughts]
    return ndjson(*thinking, *(ollama_chunk(p) for p in pieces), ollama_final(**figures))


def reasoning_delta(text: str, flavour: str, key: str = "reasoning_content") -> dict[str, Any]:
    """A delta carrying reasoning as each engine sends it (SGLang also names the empty fields)."""
    content: dict[str, Any] = {key: text}
    if flavour == "sglang":
        content = {"role": None, "content": None, key: text, "tool_calls": None}
    return {"index": 0, "delta": content, "logprobs": None, "finish_reason": None}


def openai_reasoning_stream(
    thoughts: list[str],
    pieces: list[str],
    flavour: str,
    usage_body: dict[str, Any],
    key: str = "reasoning_content",
) -> bytes:
    """A /v1/chat/completions answer with a reasoning parser: reasoning deltas, then content deltas."""
    events: list[dict[str, Any] | str] = [openai_chunk(flavour, [delta("", role=True)])]
    events += [openai_chunk(flavour, [reasoning_delta(t, flavour, key)]) for t in thoughts]
    events += [openai_chunk(flavour, [delta(p)]) for p in pieces]
    events += [openai_chunk(flavour, [delta(None, "stop")]), openai_chunk(flavour, [], usage=usage_body)]
    return sse(*events, "[DONE]")


def events(body: bytes) -> list[bytes]:
    """An SSE or NDJSON body cut into its events (lines), each as dribble() should send it."""
    separator = b"\n\n" if body.startswith(b"data:") else b"\n"
    return [piece + separator for piece in body.split(separator) if piece]


def serve(routes: dict[str, Route], seen: list[httpx.Request] | None = None) -> httpx.MockTransport:
    """A transport answering "METHOD /path" routes, 404 otherwise; requests are appended to `seen`."""

    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        route = routes.get(f"{request.method} {request.url.path}")
        if route is None:
            return httpx.Response(404, json={"error": "not found"})
        return route(request) if callable(route) else route

    return httpx.MockTransport(handle)


class FakeClock:
    """Stands in for base.now(): reads whatever time the body generator last set."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


async def dribble(pieces: list[bytes], clock: FakeClock) -> AsyncIterator[bytes]:
    """Send `pieces` one by one, the clock reading i while piece i is on its way."""
    for i, piece in enumerate(pieces):
        clock.t = float(i)
        yield piece


async def fail_after(body: bytes, error: Exception) -> AsyncIterator[bytes]:
    """Send `body`, then fail the way a dying connection does."""
    yield body
    raise error


def closed_port() -> int:
    """A localhost port nothing listens on."""
    return free_port()
