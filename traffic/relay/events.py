"""An engine's answer read into API-neutral events: pieces of the answer, then its end.

`OllamaReader` reads Ollama's NDJSON lines (or its whole answer), `OpenAIReader` the SSE data of
an OpenAI-compatible engine (or its whole answer). OpenAI streams a tool call as fragments of its
arguments; the reader joins them and hands the call on whole once the engine says the choice is
finished, as Ollama streams it. The engine's own figures come from engines.clients' parsers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engines.clients.base import EngineFigures, as_float, as_list
from engines.clients.ollama import figures_from_final
from engines.clients.openai import answer_figures

from .upstream import StreamError

__all__ = ["Call", "End", "Event", "OllamaReader", "OpenAIReader", "Piece", "parse_arguments"]

NS = 1e9


@dataclass(frozen=True)
class Call:
    """One complete tool call: arguments as an object (Ollama's way), id where the engine gave one."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass
class Piece:
    """Part of the answer: text, reasoning text, complete tool calls."""

    content: str = ""
    thinking: str = ""
    tool_calls: list[Call] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.content or self.thinking or self.tool_calls)


@dataclass
class End:
    """The answer's end: the finish reason in OpenAI's words, and the engine's own figures."""

    finish_reason: str
    figures: EngineFigures
    total_s: float | None = None  # Ollama's total_duration; OpenAI engines give none
    load_s: float | None = None  # Ollama's load_duration


Event = Piece | End


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as an object, from OpenAI's JSON string or Ollama's object."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise StreamError(f"a tool call's arguments are not JSON: {str(raw)[:100]}") from None
    if not isinstance(value, dict):
        raise StreamError(f"a tool call's arguments are not a JSON object: {str(raw)[:100]}")
    return value


def _reported_error(data: dict[str, Any]) -> None:
    error = data.get("error")
    if error is None and data.get("object") == "error":
        error = data
    if error is not None:
        message = error.get("message", error) if isinstance(error, dict) else error
        raise StreamError(f"the engine reported an error: {str(message)[:300]}")


@dataclass
class OllamaReader:
    """Reads Ollama's /api/chat and /api/generate answers."""

    tool_called: bool = False  # Ollama streams calls before its final line, which then has none

    def line(self, data: dict[str, Any]) -> list[Event]:
        """The events of one NDJSON object (StreamError for an error line)."""
        _reported_error(data)
        message = data.get("message")
        message = message if isinstance(message, dict) else {}
        piece = Piece(
            content=_text(message.get("content")) + _text(data.get("response")),
            thinking=_text(message.get("thinking")) + _text(data.get("thinking")),
            tool_calls=[_call(c) for c in as_list(message.get("tool_calls")) if isinstance(c, dict)],
        )
        self.tool_called = self.tool_called or bool(piece.tool_calls)
        events: list[Event] = [piece] if piece else []
        if data.get("done") is True:
            events.append(self._end(data, self.tool_called))
        return events

    def whole(self, data: dict[str, Any]) -> list[Event]:
        """A non-streamed answer: the same object as the final line, with the whole text."""
        events = self.line(data)
        if not any(isinstance(e, End) for e in events):
            raise StreamError("the engine's answer has no done:true")
        return events

    def _end(self, data: dict[str, Any], called: bool) -> End:
        figures = figures_from_final(data)
        reason = str(data.get("done_reason") or "stop")
        total, load = as_float(data.get("total_duration")), as_float(data.get("load_duration"))
        return End(
            finish_reason="tool_calls" if called and reason == "stop" else reason,
            figures=figures,
            total_s=total / NS if total is not None else None,
            load_s=load / NS if load is not None else None,
        )


def _call(call: dict[str, Any]) -> Call:
    """A whole tool call in either API's shape (arguments an object or a JSON string)."""
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    arguments = parse_arguments(function.get("arguments"))
    return Call(_text(function.get("name")), arguments, _text(call.get("id")))


@dataclass
class _Fragments:
    """A streamed OpenAI tool call as far as it has come."""

    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class OpenAIReader:
    """Reads an OpenAI-compatible engine's /v1/chat/completions and /v1/completions answers."""

    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    calls: dict[int, _Fragments] = field(default_factory=dict)
    tool_called: bool = False

    def chunk(self, data: dict[str, Any]) -> list[Event]:
        """The events of one SSE data object: text at once, tool calls once finished."""
        _reported_error(data)
        self._note(data)
        piece = Piece()
        for choice in (c for c in as_list(data.get("choices")) if isinstance(c, dict)):
            delta = choice.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            piece.content += _text(delta.get("content")) + _text(choice.get("text"))
            piece.thinking += _text(delta.get("reasoning_content")) + _text(delta.get("reasoning"))
            self._fragments(as_list(delta.get("tool_calls")))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
                piece.tool_calls = self._complete_calls()
        return [piece] if piece else []

    def done(self) -> list[Event]:
        """At `data: [DONE]`: calls still open (an engine that gave no finish reason), then the end."""
        piece = Piece(tool_calls=self._complete_calls())
        if self.finish_reason is None:
            raise StreamError("the engine ended its stream without a finish reason")
        end = End(self._reason(), answer_figures(self.usage, self.timings, self.finish_reason))
        return [piece, end] if piece else [end]

    def whole(self, data: dict[str, Any]) -> list[Event]:
        """A non-streamed answer: choices[0].message (or .text), usage and timings."""
        _reported_error(data)
        self._note(data)
        choices = [c for c in as_list(data.get("choices")) if isinstance(c, dict)]
        if not choices:
            raise StreamError("the engine's answer has no choices")
        choice = choices[0]
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        calls = [_call(c) for c in as_list(message.get("tool_calls")) if isinstance(c, dict)]
        self.tool_called = bool(calls)
        piece = Piece(
            content=_text(message.get("content")) + _text(choice.get("text")),
            thinking=_text(message.get("reasoning_content")) + _text(message.get("reasoning")),
            tool_calls=calls,
        )
        self.finish_reason = str(choice.get("finish_reason") or "stop")
        end = End(self._reason(), answer_figures(self.usage, self.timings, self.finish_reason))
        return [piece, end] if piece else [end]

    def _reason(self) -> str:
        reason = self.finish_reason or "stop"
        return "tool_calls" if self.tool_called and reason == "stop" else reason

    def _note(self, data: dict[str, Any]) -> None:
        # Later chunks win: with continuous usage stats every chunk carries a running total.
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        if isinstance(data.get("timings"), dict):
            self.timings = data["timings"]

    def _fragments(self, deltas: list[Any]) -> None:
        for delta in (d for d in deltas if isinstance(d, dict)):
            index = delta.get("index", len(self.calls))
            call = self.calls.setdefault(index if isinstance(index, int) else 0, _Fragments())
            function = delta.get("function")
            function = function if isinstance(function, dict) else {}
            call.id = call.id or _text(delta.get("id"))
            call.name += _text(function.get("name"))
            call.arguments += _text(function.get("arguments"))

    def _complete_calls(self) -> list[Call]:
        calls = [Call(c.name, parse_arguments(c.arguments), c.id) for _, c in sorted(self.calls.items())]
        self.calls.clear()
        self.tool_called = self.tool_called or bool(calls)
        return calls


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
