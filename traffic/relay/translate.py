"""Request bodies from one API into the other: Ollama -> OpenAI-compatible, and back.

Fields an engine cannot honour per request (Ollama's load-time options such as num_ctx) are left
out and named in `Translated.ignored` with the reason; a request that cannot be carried over
(an image by URL to Ollama, tool-call arguments that are not JSON) is a `BadRequest`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engines.clients.base import as_dict, as_list

__all__ = ["BadRequest", "Translated", "merge_system", "ollama_to_openai", "openai_to_ollama", "text_of"]

# Ollama options that are load-time settings of the engine: an OpenAI engine fixes them at launch.
LOAD_TIME = ("num_ctx", "num_batch", "num_gpu", "main_gpu", "use_mmap", "num_thread", "draft_num_predict")
LOAD_REASON = "a load-time setting: the engine behind the relay fixed it at launch"
SAMPLING = ("temperature", "top_p", "top_k", "seed", "stop", "min_p", "typical_p",
            "presence_penalty", "frequency_penalty")
EFFORTS = ("low", "medium", "high")
MAGIC = (("/9j/", "image/jpeg"), ("UklGR", "image/webp"), ("R0lGOD", "image/gif"))


class BadRequest(Exception):
    """The client's request cannot be understood or carried over; answered with HTTP 400."""


@dataclass
class Translated:
    """The engine's path and body, and the fields left out with why."""

    path: str
    body: dict[str, Any]
    ignored: dict[str, str] = field(default_factory=dict)


def text_of(content: Any) -> str:
    """A message's text: a string, or OpenAI's content parts' text joined."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def merge_system(messages: list[Any]) -> list[Any]:
    """The messages with every later system message's text appended to the first's (a blank line
    between), for chat templates that refuse a second system message."""
    systems = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "system"]
    if len(systems) < 2:
        return messages
    first = dict(messages[systems[0]])
    first["content"] = "\n\n".join(text_of(messages[i].get("content")) for i in systems)
    merged = [m for i, m in enumerate(messages) if i not in systems[1:]]
    merged[systems[0]] = first
    return merged


# Ollama -> OpenAI-compatible ------------------------------------------------------------------


def ollama_to_openai(path: str, body: dict[str, Any], engine_kind: str = "") -> Translated:
    """An Ollama /api/chat or /api/generate body as an OpenAI-compatible request."""
    out: dict[str, Any] = {"model": body.get("model")}
    ignored: dict[str, str] = {}
    if path == "/api/generate" and body.get("raw") is True:
        target, out["prompt"] = "/v1/completions", _prompt(body)
    else:
        target, out["messages"] = "/v1/chat/completions", _openai_messages(body, path)
    out["stream"] = body.get("stream") is not False  # Ollama streams unless told not to
    if out["stream"]:
        out["stream_options"] = {"include_usage": True}
    if isinstance(body.get("tools"), list) and body["tools"]:
        # The ollama client sends "tools": [] when it has none; vLLM refuses an empty list (400).
        out["tools"] = body["tools"]
    out |= _think(body.get("think"))
    out |= _options(as_dict(body.get("options")), engine_kind, ignored)
    if body.get("format") is not None:
        out["response_format"] = _response_format(body["format"])
    for key in ("suffix", "context", "template", "images") if path == "/api/generate" else ():
        if body.get(key) and not (key == "images" and target == "/v1/chat/completions"):
            ignored[key] = "no OpenAI-compatible counterpart"
    if "keep_alive" in body:
        ignored["keep_alive"] = "the engine behind the relay stays loaded"
    return Translated(target, out, ignored)


def _prompt(body: dict[str, Any]) -> str:
    prompt = body.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise BadRequest("prompt must be a string")
    return prompt or ""


def _openai_messages(body: dict[str, Any], path: str) -> list[dict[str, Any]]:
    if path == "/api/generate":
        system = body.get("system")
        user = {"role": "user", "content": _prompt(body), "images": body.get("images")}
        messages: Any = ([{"role": "system", "content": system}] if system else []) + [user]
    else:
        messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages must be a list of objects")
    pending: list[str] = []  # ids of the last assistant's calls, for tool results that name none
    return [_openai_message(m, i, pending) for i, m in enumerate(messages)]


def _openai_message(message: dict[str, Any], i: int, pending: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.get("role"), "content": message.get("content") or ""}
    images = as_list(message.get("images"))
    if images:
        parts = [{"type": "text", "text": text_of(out["content"])}]
        out["content"] = parts + [{"type": "image_url", "image_url": {"url": _data_url(b)}} for b in images]
    calls = as_list(message.get("tool_calls"))
    if calls:
        out["tool_calls"] = [_openai_call(c, f"call_{i}_{j}") for j, c in enumerate(calls)]
        pending[:] = [c["id"] for c in out["tool_calls"]]
    if message.get("thinking"):
        out["reasoning_content"] = message["thinking"]
    if out["role"] == "tool":
        call_id = message.get("tool_call_id") or (pending.pop(0) if pending else "")
        out["tool_call_id"] = call_id
        if message.get("tool_name"):
            out["name"] = message["tool_name"]
    return out


def _openai_call(call: Any, default_id: str) -> dict[str, Any]:
    function = as_dict(as_dict(call).get("function"))
    arguments = function.get("arguments")
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    call_id = as_dict(call).get("id") or default_id
    named = {"name": function.get("name"), "arguments": arguments}
    return {"id": call_id, "type": "function", "function": named}


def _data_url(image: Any) -> str:
    if not isinstance(image, str):
        raise BadRequest("images must be base64 strings")
    # The format from base64's first characters (JPEG's and WebP's magic bytes); PNG otherwise.
    mime = next((m for prefix, m in MAGIC if image.startswith(prefix)), "image/png")
    return f"data:{mime};base64,{image}"


def _think(think: Any) -> dict[str, Any]:
    if think is None:
        return {}
    if isinstance(think, bool):
        return {"chat_template_kwargs": {"enable_thinking": think}}
    if think in EFFORTS:
        return {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": think}
    raise BadRequest(f"think must be true, false or one of {', '.join(EFFORTS)}")


def _options(options: dict[str, Any], engine_kind: str, ignored: dict[str, str]) -> dict[str, Any]:
    out = {key: options[key] for key in SAMPLING if options.get(key) is not None}
    limit = options.get("num_predict")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        out["max_tokens"] = limit  # a negative num_predict means no limit, as no max_tokens does
    if options.get("repeat_penalty") is not None:
        # llama-server's name for it; vLLM and SGLang call it repetition_penalty.
        key = "repeat_penalty" if engine_kind in ("", "llama-server") else "repetition_penalty"
        out[key] = options["repeat_penalty"]
    if options.get("repeat_last_n") is not None and engine_kind in ("", "llama-server"):
        out["repeat_last_n"] = options["repeat_last_n"]
    for key in LOAD_TIME:
        if key in options:
            ignored[key] = LOAD_REASON
    return out


def _response_format(fmt: Any) -> dict[str, Any]:
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": fmt}}
    raise BadRequest('format must be "json" or a JSON schema object')


# OpenAI-compatible -> Ollama ------------------------------------------------------------------


def openai_to_ollama(path: str, body: dict[str, Any]) -> Translated:
    """An OpenAI /v1/chat/completions or /v1/completions body as an Ollama request."""
    out: dict[str, Any] = {"model": body.get("model"), "stream": body.get("stream") is True}
    if path == "/v1/completions":
        target, out["raw"] = "/api/generate", True
        prompt = body.get("prompt")
        out["prompt"] = prompt[0] if isinstance(prompt, list) and prompt else prompt
        if not isinstance(out["prompt"], str):
            raise BadRequest("prompt must be a string (or a list of one)")
    else:
        target, out["messages"] = "/api/chat", _ollama_messages(body.get("messages"))
    if isinstance(body.get("tools"), list) and body["tools"]:
        # The ollama client sends "tools": [] when it has none; vLLM refuses an empty list (400).
        out["tools"] = body["tools"]
    think = _ollama_think(body)
    if think is not None:
        out["think"] = think
    out["options"] = _ollama_options(body)
    fmt = as_dict(body.get("response_format"))
    if fmt.get("type") == "json_object":
        out["format"] = "json"
    elif fmt.get("type") == "json_schema":
        out["format"] = as_dict(fmt.get("json_schema")).get("schema") or "json"
    ignored = {k: "Ollama has no counterpart" for k in ("n", "logit_bias", "tool_choice") if k in body}
    return Translated(target, out, ignored)


def _ollama_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages must be a list of objects")
    names: dict[str, str] = {}  # tool call id -> tool name, for the tool results that answer them
    return [_ollama_message(m, names) for m in messages]


def _ollama_message(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    content = message.get("content")
    out: dict[str, Any] = {"role": message.get("role"), "content": text_of(content)}
    images = [_base64(p) for p in as_list(content) if isinstance(p, dict) and p.get("type") == "image_url"]
    if images:
        out["images"] = images
    calls = []
    for call in (c for c in as_list(message.get("tool_calls")) if isinstance(c, dict)):
        function = as_dict(call.get("function"))
        names[str(call.get("id"))] = str(function.get("name"))
        calls.append({"id": call.get("id"), "function": {
            "name": function.get("name"), "arguments": _arguments(function.get("arguments"))}})
    if calls:
        out["tool_calls"] = calls
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        out["thinking"] = reasoning
    if out["role"] == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
        out["tool_name"] = message.get("name") or names.get(str(message.get("tool_call_id")), "")
    return out


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        raise BadRequest(f"tool call arguments are not JSON: {str(raw)[:100]}") from None
    if not isinstance(value, dict):
        raise BadRequest("tool call arguments must be a JSON object")
    return value


def _base64(part: dict[str, Any]) -> str:
    url = as_dict(part.get("image_url")).get("url")
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise BadRequest("an image must be a data: URL with base64 content (Ollama fetches no URLs)")
    return url.split(";base64,", 1)[1]


def _ollama_think(body: dict[str, Any]) -> bool | str | None:
    effort = body.get("reasoning_effort")
    if effort in EFFORTS:
        return str(effort)
    if effort == "none":
        return False
    enable = as_dict(body.get("chat_template_kwargs")).get("enable_thinking")
    return enable if isinstance(enable, bool) else None


def _ollama_options(body: dict[str, Any]) -> dict[str, Any]:
    options = {key: body[key] for key in SAMPLING if body.get(key) is not None}
    for key in ("max_completion_tokens", "max_tokens", "n_predict"):
        if body.get(key) is not None:
            options["num_predict"] = body[key]
            break
    for key in ("repeat_penalty", "repetition_penalty"):
        if body.get(key) is not None:
            options["repeat_penalty"] = body[key]
    return options
