"""Answer events written in the client's API: Ollama's NDJSON lines or OpenAI's SSE chunks.

Ollama's final line carries the engine's counts and durations in nanoseconds: from the engine's
own figures (llama-server's `timings`, OpenAI `usage`), and from what the relay measured only
where the engine gives none (total_duration always: OpenAI engines report no total).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .events import Call, End, Piece

__all__ = ["OllamaWriter", "OpenAIWriter", "Seen", "ollama_error", "openai_error"]

NS = 1e9


@dataclass(frozen=True)
class Seen:
    """What the relay measured of the answer so far, for the figures an engine does not give."""

    e2e_s: float
    ttft_s: float | None
    generation_s: float | None
    pieces: int


def ollama_error(message: str) -> dict[str, Any]:
    """Ollama's error body."""
    return {"error": message}


def openai_error(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error body."""
    error_type = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": error_type, "code": status}}


def _ollama_reason(reason: str) -> str:
    # Ollama ends a reply with tool calls as "stop"; OpenAI's API says "tool_calls".
    return "stop" if reason == "tool_calls" else reason


def _ns(seconds: float | None) -> int:
    return round(seconds * NS) if seconds is not None else 0


class OllamaWriter:
    """Events as Ollama /api/chat (key "message") or /api/generate (key "response") objects."""

    def __init__(self, model: str, generate: bool) -> None:
        self.model, self.generate = model, generate

    def _body(self, piece: Piece, done: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "created_at": _now_iso()}
        if self.generate:
            body["response"] = piece.content
            if piece.thinking:
                body["thinking"] = piece.thinking
        else:
            message: dict[str, Any] = {"role": "assistant", "content": piece.content}
            if piece.thinking:
                message["thinking"] = piece.thinking
            if piece.tool_calls:
                message["tool_calls"] = [_ollama_call(c, i) for i, c in enumerate(piece.tool_calls)]
            body["message"] = message
        return body | {"done": done}

    def piece(self, piece: Piece) -> bytes:
        """One NDJSON line of the answer."""
        return _line(self._body(piece, False))

    def final(self, end: End, seen: Seen, piece: Piece | None = None) -> dict[str, Any]:
        """The done:true object (with the whole answer when not streamed)."""
        figures = end.figures
        body = self._body(piece or Piece(), True) | {
            "done_reason": _ollama_reason(end.finish_reason),
            "total_duration": _ns(end.total_s if end.total_s is not None else seen.e2e_s),
            "load_duration": _ns(end.load_s),
            "prompt_eval_count": figures.prompt_tokens or 0,
            "prompt_eval_duration": _ns(figures.prompt_s if figures.prompt_s is not None else seen.ttft_s),
            "eval_count": figures.output_tokens if figures.output_tokens is not None else seen.pieces,
            "eval_duration": _ns(figures.decode_s if figures.decode_s is not None else seen.generation_s),
        }
        if self.generate:
            body["context"] = []
        return body

    def end(self, end: End, seen: Seen) -> bytes:
        """The final line."""
        return _line(self.final(end, seen))

    def error(self, message: str) -> bytes:
        """Ollama's mid-stream error line."""
        return _line(ollama_error(message))


def _ollama_call(call: Call, index: int) -> dict[str, Any]:
    function = {"index": index, "name": call.name, "arguments": call.arguments}
    return ({"id": call.id} if call.id else {}) | {"function": function}


class OpenAIWriter:
    """Events as OpenAI chat.completion(.chunk) or text_completion objects."""

    def __init__(self, model: str, completion: bool, include_usage: bool) -> None:
        self.model, self.completion, self.include_usage = model, completion, include_usage
        self.id = f"{'cmpl' if completion else 'chatcmpl'}-relay{time.time_ns():x}"
        self.created = int(time.time())
        self.started = False

    def _object(self, choices: list[dict[str, Any]], whole: bool) -> dict[str, Any]:
        name = "text_completion" if self.completion else "chat.completion" + ("" if whole else ".chunk")
        return {"id": self.id, "object": name, "created": self.created, "model": self.model,
                "choices": choices}

    def _choice(self, piece: Piece, finish: str | None, whole: bool) -> dict[str, Any]:
        if self.completion:
            return {"index": 0, "text": piece.content, "finish_reason": finish}
        message: dict[str, Any] = {"role": "assistant"} if whole or not self.started else {}
        if piece.content or whole:
            message["content"] = piece.content
        if piece.thinking:
            message["reasoning_content"] = piece.thinking
        if piece.tool_calls:
            message["tool_calls"] = [_openai_call(c, i) for i, c in enumerate(piece.tool_calls)]
        return {"index": 0, "message" if whole else "delta": message, "finish_reason": finish}

    def piece(self, piece: Piece) -> bytes:
        """One SSE chunk of the answer."""
        chunk = self._object([self._choice(piece, None, False)], False)
        self.started = True
        return _sse(chunk)

    def end(self, end: End, seen: Seen) -> bytes:
        """The finish chunk, the usage chunk when the client asked for it, and [DONE]."""
        finish = self._object([self._choice(Piece(), end.finish_reason, False)], False)
        chunks = [finish]
        if self.include_usage:
            chunks.append(self._object([], False) | {"usage": _usage(end, seen)})
        return b"".join(_sse(c) for c in chunks) + b"data: [DONE]\n\n"

    def final(self, end: End, seen: Seen, piece: Piece | None = None) -> dict[str, Any]:
        """The whole non-streamed answer."""
        choice = self._choice(piece or Piece(), end.finish_reason, True)
        return self._object([choice], True) | {"usage": _usage(end, seen)}

    def error(self, message: str) -> bytes:
        """The SSE event that tells an OpenAI client the stream failed (its SDK raises on it)."""
        return _sse(openai_error(502, message))


def _openai_call(call: Call, index: int) -> dict[str, Any]:
    function = {"name": call.name, "arguments": json.dumps(call.arguments)}
    return {"index": index, "id": call.id or f"call_{index}", "type": "function", "function": function}


def _usage(end: End, seen: Seen) -> dict[str, Any]:
    figures = end.figures
    prompt = figures.prompt_tokens or 0
    output = figures.output_tokens if figures.output_tokens is not None else seen.pieces
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": output}
    usage["total_tokens"] = prompt + output
    if figures.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": figures.cached_tokens}
    return usage


def _line(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode() + b"\n"


def _sse(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
