"""Ollama's native API: /api/chat streamed as NDJSON, the final `done` line carrying the figures.

Durations in Ollama's figures are nanoseconds. prompt_eval_count includes cached prompt tokens and
Ollama does not say how many were cached, so cached_tokens stays None. Reasoning arrives as
`message.thinking`; eval_count counts it, but Ollama neither says how many of those tokens were
reasoning nor offers a tokenizer, so reasoning_tokens stays unknown.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, ClassVar

from engines.clients.base import (
    Chunk,
    EngineClient,
    EngineError,
    EngineFigures,
    GenerationRequest,
    as_dict,
    as_float,
    as_int,
    as_list,
    load_json_object,
    merge_extra,
    stopped_mid_answer,
)
from engines.clients.reasoning import ThinkSplitter

__all__ = ["OllamaClient"]

NS = 1e9


class OllamaClient(EngineClient):
    """Talks to `ollama serve` through its native API."""

    api: ClassVar[str] = "ollama"
    engine_kind = "ollama"

    async def stream(self, request: GenerationRequest) -> AsyncIterator[Chunk | EngineFigures]:
        n_chunks, think = 0, ThinkSplitter()
        async with aclosing(self._stream_lines("/api/chat", chat_body(request))) as lines:
            async for t, line in lines:  # t: when the line's bytes were read, before parsing
                if not line.strip():
                    continue
                data = load_json_object(line, "NDJSON line")
                if "error" in data:
                    raise EngineError(f"{self.base_url} reported an error: {data['error']}")
                thinking = _message_text(data, "thinking")
                pieces = [Chunk(t, thinking, reasoning=True)] if thinking else []
                done = data.get("done") is True
                pieces += think.feed(t, _message_text(data, "content")) + (think.finish(t) if done else [])
                for chunk in pieces:
                    n_chunks += 1
                    yield chunk
                if done:
                    yield figures_from_final(data)
                    return
        raise stopped_mid_answer(n_chunks)

    async def version(self) -> str | None:
        version = (await self._get_object("/api/version")).get("version")
        return str(version) if version else None

    async def models(self) -> list[str]:
        listed = (await self._get_object("/api/tags")).get("models")
        entries = listed if isinstance(listed, list) else []
        return [str(e["name"]) for e in entries if isinstance(e, dict) and e.get("name")]

    async def model_info(self, model: str) -> dict[str, Any]:
        """/api/show's details and GGUF facts, plus the model's digest from /api/tags."""
        show = await self._post_object("/api/show", {"model": model})
        tags = await self._get_object("/api/tags")
        details = as_dict(show.get("details"))
        gguf = as_dict(show.get("model_info"))
        arch = gguf.get("general.architecture")
        return {
            "id": model,
            "digest": _digest(tags, model),
            "quantization": details.get("quantization_level"),
            "parameter_size": details.get("parameter_size"),
            "family": details.get("family"),
            "format": details.get("format"),
            "architecture": arch,
            "parameter_count": gguf.get("general.parameter_count"),
            "context_length": gguf.get(f"{arch}.context_length") if arch else None,
        }


def chat_body(request: GenerationRequest) -> dict[str, Any]:
    """The /api/chat body; `request.extra` is laid over it (its "options" merge into ours)."""
    options: dict[str, Any] = {"temperature": request.temperature, "num_predict": request.max_tokens}
    if request.top_p is not None:
        options["top_p"] = request.top_p
    if request.top_k is not None:
        options["top_k"] = request.top_k
    if request.seed is not None:
        options["seed"] = request.seed
    body: dict[str, Any] = {
        "model": request.model,
        "messages": request.messages,
        "stream": True,
        "options": options,
    }
    think = _think(request)
    if think is not None:
        body["think"] = think
    return merge_extra(body, request.extra)


def _think(request: GenerationRequest) -> bool | str | None:
    """Ollama's top-level `think`: true/false, or a level ("low"/"medium"/"high", as gpt-oss takes)
    for a reasoning effort; None leaves it out, so the model's default holds."""
    if request.reasoning_effort is not None and request.thinking is not False:
        return request.reasoning_effort
    return request.thinking


def figures_from_final(data: dict[str, Any]) -> EngineFigures:
    """The engine's figures from the final (done) line."""
    eval_count = as_int(data.get("eval_count"))
    eval_ns = as_float(data.get("eval_duration"))
    prompt_ns = as_float(data.get("prompt_eval_duration"))
    return EngineFigures(
        output_tokens=eval_count,
        prompt_tokens=as_int(data.get("prompt_eval_count")),
        cached_tokens=None,
        prompt_s=prompt_ns / NS if prompt_ns is not None else None,
        decode_s=eval_ns / NS if eval_ns is not None else None,
        decode_tps=eval_count / eval_ns * NS if eval_count is not None and eval_ns else None,
        finish_reason=data.get("done_reason"),
    )


def _message_text(data: dict[str, Any], key: str) -> str:
    """The line's message `content` (the answer) or `thinking` (the reasoning); "" when absent."""
    value = as_dict(data.get("message")).get(key)
    return value if isinstance(value, str) else ""


def _digest(tags: dict[str, Any], model: str) -> str | None:
    """The digest /api/tags lists for `model`; a bare name means its ":latest" tag, as in Ollama."""
    wanted = (model, f"{model}:latest") if ":" not in model else (model,)
    models = as_list(tags.get("models"))
    for entry in models:
        if isinstance(entry, dict) and (entry.get("name") in wanted or entry.get("model") in wanted):
            return entry.get("digest")
    return None
