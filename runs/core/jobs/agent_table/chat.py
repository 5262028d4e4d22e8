"""One non-streamed chat request with tools, for both APIs the engines speak.

Tool calls are easier to read whole than streamed, so each agent step is one plain POST through
the client's httpx session: OpenAI's /v1/chat/completions (tool arguments are a JSON string) or
Ollama's /api/chat with stream false (tool arguments are an object). The clients' streaming
path is untouched. Several system messages are merged into one before sending, since some chat
templates answer HTTP 500 to two.

Malformed tool-call arguments (not JSON, or JSON that is no object) are treated alike for both
APIs: the history sends them back as an empty object (Ollama takes only objects, and chat
templates that parse the arguments fail on broken JSON), and the tool result tells the model
what was wrong, quoting what it wrote (`arguments_error`).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engines.clients import ollama
from engines.clients.base import (
    EngineClient,
    EngineError,
    EngineFigures,
    GenerationRequest,
    as_dict,
    as_int,
    now,
)
from engines.clients.openai import OpenAIClient, add_timings, raise_reported_error

__all__ = [
    "ChatReply", "ToolCall", "arguments_error", "assistant_message", "chat", "merge_system", "tool_message",
]

PATHS = {OpenAIClient.api: "/v1/chat/completions", ollama.OllamaClient.api: "/api/chat"}
QUOTED_CHARS = 200
EXAMPLE_ARGUMENTS = {"search": '{"pattern": "def "}', "read_file": '{"path": "app.py", "start_line": 1}'}


@dataclass(frozen=True)
class ToolCall:
    """One tool call; `arguments` is None when the model's arguments are not a JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


@dataclass(frozen=True)
class ChatReply:
    """A whole reply: its text, its tool calls, the engine's figures and the client's clock."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    figures: EngineFigures
    sent_at: float
    finished_at: float


async def chat(client: EngineClient, request: GenerationRequest) -> ChatReply:
    """Send one request unstreamed; raises EngineError for any failure, as the clients do."""
    api = _api(client)
    body = _body(client, request)
    sent_at = now()
    data = await client.post_json(PATHS[api], body)
    finished_at = now()
    raise_reported_error(data, client.base_url)
    text, calls, figures = _openai_reply(data) if api == "openai" else _ollama_reply(data)
    return ChatReply(text, calls, figures, sent_at, finished_at)


def merge_system(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with every system message merged into one, first."""
    system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    return ([{"role": "system", "content": "\n\n".join(system)}] if system else []) + rest


def assistant_message(client: EngineClient, reply: ChatReply) -> dict[str, Any]:
    """The reply as the assistant turn to send back, tool calls in the API's own shape.

    Malformed arguments go back as an empty object in both shapes (see the module docstring).
    """
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls and _api(client) == "openai":
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.raw_arguments if c.arguments is not None else "{}"}}
            for c in reply.tool_calls
        ]
    elif reply.tool_calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments if c.arguments is not None else {}}}
            for c in reply.tool_calls
        ]
    return message


def arguments_error(call: ToolCall) -> str | None:
    """The tool result for a call whose arguments are not a JSON object; None when they are one."""
    if call.arguments is not None:
        return None
    try:
        json.loads(call.raw_arguments)
    except ValueError:
        problem = "were not valid JSON"
    else:
        problem = "were valid JSON but not an object"
    quoted = call.raw_arguments[:QUOTED_CHARS] + ("..." if len(call.raw_arguments) > QUOTED_CHARS else "")
    example = EXAMPLE_ARGUMENTS.get(call.name, '{"name": "value"}')
    return (
        f"error: not executed: the arguments of this {call.name} call {problem}: {quoted!r}. "
        f"Call the tool again with its arguments as one JSON object, e.g. {example}."
    )


def tool_message(client: EngineClient, call: ToolCall, content: str) -> dict[str, Any]:
    """A tool result: OpenAI ties it to the call's id, Ollama to the tool's name (its id too)."""
    if _api(client) == "openai":
        return {"role": "tool", "tool_call_id": call.id, "content": content}
    return {"role": "tool", "tool_name": call.name, "tool_call_id": call.id, "content": content}


def _api(client: EngineClient) -> str:
    if client.api not in PATHS:
        raise EngineError(f"the agent task speaks only the Ollama and OpenAI APIs, not {client.api!r}")
    return client.api


def _body(client: EngineClient, request: GenerationRequest) -> dict[str, Any]:
    """The client's own streaming body (sampling, `extra` with the tools), made non-streaming."""
    if isinstance(client, OpenAIClient):
        body = client.chat_body(request)
        # vLLM refuses stream_options on a request that does not stream.
        body.pop("stream_options", None)
    else:
        body = ollama.chat_body(request)
    body["stream"] = False
    return body


def _openai_reply(data: dict[str, Any]) -> tuple[str, tuple[ToolCall, ...], EngineFigures]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EngineError(f"malformed chat answer (no choices): {json.dumps(data)[:100]}")
    message = as_dict(choices[0].get("message"))
    calls = _calls(message.get("tool_calls"))
    usage = as_dict(data.get("usage"))
    details = usage.get("prompt_tokens_details")
    figures = EngineFigures(
        output_tokens=as_int(usage.get("completion_tokens")),
        prompt_tokens=as_int(usage.get("prompt_tokens")),
        cached_tokens=as_int(details.get("cached_tokens")) if isinstance(details, dict) else None,
        finish_reason=choices[0].get("finish_reason"),
    )
    if isinstance(data.get("timings"), dict):
        add_timings(figures, data["timings"])
    return _text(message), calls, figures


def _ollama_reply(data: dict[str, Any]) -> tuple[str, tuple[ToolCall, ...], EngineFigures]:
    message = data.get("message")
    if not isinstance(message, dict):
        raise EngineError(f"malformed chat answer (no message): {json.dumps(data)[:100]}")
    return _text(message), _calls(message.get("tool_calls")), ollama.figures_from_final(data)


def _calls(listed: Any) -> tuple[ToolCall, ...]:
    entries = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    return tuple(_call(entry, index) for index, entry in enumerate(entries))


def _call(entry: dict[str, Any], index: int) -> ToolCall:
    function = as_dict(entry.get("function"))
    raw = function.get("arguments")
    if isinstance(raw, str):
        arguments = _json_object(raw)
    else:
        arguments = raw if isinstance(raw, dict) else None
        raw = json.dumps(raw if raw is not None else {})
    call_id = str(entry.get("id") or f"call_{index}")
    return ToolCall(call_id, str(function.get("name") or ""), arguments, raw)


def _json_object(raw: str) -> dict[str, Any] | None:
    if not raw.strip():
        return {}  # some engines send "" for a call without arguments
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""

