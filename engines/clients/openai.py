"""The OpenAI-compatible API of llama-server, vLLM and SGLang: /v1/chat/completions streamed as SSE.

Token counts come from the usage chunk (stream_options.include_usage). llama-server also attaches
`timings` (milliseconds) to its last chunk: engine-side prompt and decode time, cache and draft counts.
vLLM attaches none; its side of a lone request is read from /metrics (engines.clients.counters).
"""
from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from engines import kinds
from engines.clients import base
from engines.clients.base import (
    Chunk,
    EngineClient,
    EngineError,
    EngineFigures,
    EngineHTTPError,
    Generation,
    GenerationRequest,
    as_dict,
    as_float,
    as_int,
    as_list,
    load_json_object,
    merge_extra,
    stopped_mid_answer,
)
from engines.clients.counters import DraftCounters, LoneRequests, RequestCounters
from engines.clients.openai_chunks import fast_take
from engines.clients.reasoning import ThinkSplitter
from engines.errors import EngineMalformed

__all__ = ["OpenAIClient", "add_spec_details", "add_timings", "answer_figures"]

_IGNORED_SSE_FIELDS = ("event", "id", "retry")
DONE = "[DONE]"  # the payload that ends an OpenAI-style stream
# The registry clients that speak /v1/chat/completions: SGLang's own client (engines.clients.sglang)
# is this one with its native API added, and this class is its /v1 path.
SPEAKERS = (kinds.OPENAI_COMPATIBLE, kinds.SGLANG_NATIVE)
MAX_POSITIONS = 64  # more draft positions than any engine drafts: a malformed answer


class OpenAIClient(EngineClient):
    """Talks to an engine's OpenAI-compatible API; `flavour` says which engine kind is behind it."""

    api: ClassVar[str] = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        timeout: float = 300.0,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        flavour: str,
    ) -> None:
        """:param flavour: an engine kind whose client is `kinds.OPENAI_COMPATIBLE`; other arguments
        as EngineClient.
        """
        spec = kinds.find(flavour)
        if spec is None or spec.client not in SPEAKERS:
            raise ValueError(f"unknown OpenAI-compatible engine {flavour!r}")
        super().__init__(base_url, api_key, timeout, transport)
        self.flavour = self.engine_kind = flavour
        self.spec = spec
        self.counters: LoneRequests | None = None
        if spec.counters_prefix:
            wrapper = RequestCounters if spec.figures_from_counters else DraftCounters
            self.counters = wrapper(self, spec.counters_prefix)

    async def generate(self, request: GenerationRequest) -> Generation:
        """One request; an engine whose replies carry no timings has them read from /metrics."""
        if self.counters is None:
            return await super().generate(request)
        return await self.counters.generate(super().generate, request)

    async def stream(self, request: GenerationRequest) -> AsyncIterator[Chunk | EngineFigures]:
        answer, think = _Answer(), ThinkSplitter()
        done, t = False, base.now()
        # The lines, not sse_objects: one generator less between each read and its chunk.
        async with aclosing(self._stream_lines("/v1/chat/completions", self.chat_body(request))) as lines:
            async for t, line in lines:  # t: when the line's bytes were read, before parsing
                taken = answer.take_line(line)
                if taken is None:  # not a plain chunk: the general path
                    data = self.sse_object(line)
                    if data is None:
                        continue
                    if isinstance(data, str):  # DONE
                        done = True
                        break
                    taken = answer.take(data)
                reasoning, text = taken
                if reasoning:
                    answer.n_chunks += 1
                    yield Chunk(t, reasoning, reasoning=True)
                for chunk in think.feed(t, text):
                    answer.n_chunks += 1
                    yield chunk
        if not done or answer.finish_reason is None:
            raise stopped_mid_answer(answer.n_chunks)
        for chunk in think.finish(t):
            yield chunk
        yield answer.figures()

    async def sse_objects(
        self, path: str, body: dict[str, Any]
    ) -> AsyncGenerator[tuple[float, dict[str, Any] | None], None]:
        """POST `body`; each SSE data object with its arrival time, then (time, None) for [DONE].

        An error the engine reports inside the stream is raised as EngineError.
        """
        async with aclosing(self._stream_lines(path, body)) as lines:
            async for t, line in lines:  # t: when the line's bytes were read, before parsing
                data = self.sse_object(line)
                if data is None:
                    continue
                if isinstance(data, str):  # DONE
                    yield t, None
                    return
                yield t, data

    def sse_object(self, line: str) -> dict[str, Any] | str | None:
        """A streamed line's SSE data object; DONE for the end; None for a line that carries none.

        An error the engine reports inside the stream is raised as EngineError.
        """
        payload = self._sse_data(line)
        if payload is None or payload == DONE:
            return payload
        data = load_json_object(payload, "SSE data line")
        raise_reported_error(data, self.base_url)
        return data

    def chat_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The /v1/chat/completions body; `request.extra` is laid over it."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        optional = {"seed": request.seed, "top_p": request.top_p, "top_k": request.top_k}
        body.update({key: value for key, value in optional.items() if value is not None})
        body.update(self.spec.chat_fields)
        if request.thinking is not None:
            # Qwen3-style templates read enable_thinking; llama-server, vLLM and SGLang pass it on.
            body["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        return merge_extra(body, request.extra)

    async def count_tokens(self, text: str, model: str) -> int | None:
        """POST /tokenize; None when the engine has none or it fails.

        llama-server reads `content` and `add_special`, vLLM and SGLang `prompt` and
        `add_special_tokens`; each ignores the other's keys (as the needle job relies on).
        """
        if self.spec.tokenizer != "tokenize":
            return None
        body: dict[str, Any] = {"model": model, "content": text, "prompt": text}
        body |= {"add_special": False, "add_special_tokens": False}
        try:
            data = await self._post_object("/tokenize", body)
        except EngineError:
            return None
        count = as_int(data.get("count"))
        tokens = data.get("tokens")
        return count if count is not None else len(tokens) if isinstance(tokens, list) else None

    async def version(self) -> str | None:
        for path, key in self.spec.version_paths:
            try:
                data = await self._get_object(path)
            except EngineHTTPError:
                continue
            value = data.get(key)
            return str(value) if value else None
        return None

    async def models(self) -> list[str]:
        listed = (await self._get_object("/v1/models")).get("data")
        entries = listed if isinstance(listed, list) else []
        return [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id")]

    async def model_info(self, model: str) -> dict[str, Any]:
        """The /v1/models entry whose id is `model`, or the first one (llama-server serves one model)."""
        listed = (await self._get_object("/v1/models")).get("data")
        entries = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
        if not entries:
            raise EngineError(f"{self.base_url}/v1/models lists no models")
        entry = next((e for e in entries if e.get("id") == model), entries[0])
        meta = as_dict(entry.get("meta"))
        return {
            "id": entry.get("id"),
            "digest": None,
            "max_model_len": entry.get("max_model_len"),
            "root": entry.get("root"),
            "owned_by": entry.get("owned_by"),
            "n_params": meta.get("n_params"),
            "n_ctx_train": meta.get("n_ctx_train"),
            "size": meta.get("size"),
        }

    def _sse_data(self, line: str) -> str | None:
        """The payload of a `data:` line; None for blank lines, comments and fields we do not use."""
        if line.startswith("data: "):  # nearly every line: the general case below reads it the same
            return line[6:]
        if not line or line.startswith(":"):
            return None
        field, sep, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data" and sep:
            return value
        if field == "error" and sep:
            # Older llama-server builds report a mid-stream failure as an `error:` line.
            raise EngineError(f"{self.base_url} reported an error: {value[:200]}")
        if field in _IGNORED_SSE_FIELDS:
            return None
        raise EngineMalformed(f"malformed SSE line: {line[:100]}")


@dataclass
class _Answer:
    """What the stream has told so far, beyond the content itself."""

    n_chunks: int = 0
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    spec_details: dict[str, Any] | None = None  # SGLang's sglext.spec_tokens_details

    def take(self, data: dict[str, Any]) -> tuple[str, str]:
        """Note the chunk's finish reason, usage and timings; return its reasoning and content.

        Called for every streamed chunk: plain lookups, no helper per field.
        """
        reasoning = text = ""
        choices = data.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict) and delta:
                # A string's only: reasoning_content, else reasoning (as each engine names it).
                thought = delta.get("reasoning_content")
                if not (thought and isinstance(thought, str)):
                    thought = delta.get("reasoning")
                if thought and isinstance(thought, str):
                    reasoning += thought
                content = delta.get("content")
                if content and isinstance(content, str):
                    text += content
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        # Later chunks win: with continuous usage stats every chunk carries a running total.
        if isinstance(used := data.get("usage"), dict):
            self.usage = used
        if isinstance(timings := data.get("timings"), dict):
            self.timings = timings
        if "sglext" in data:
            self._take_spec_details(data["sglext"])
        return reasoning, text

    def take_line(self, line: str) -> tuple[str, str] | None:
        """As take() for a plain chunk's `data:` line, decoded straight into the fields it reads
        (engines.clients.openai_chunks); None for any other line, which the caller parses whole."""
        taken = fast_take(line[6:]) if line.startswith("data: ") else None
        if taken is None:
            return None
        reasoning, text, finish, chunk = taken
        if finish:
            self.finish_reason = finish
        if isinstance(chunk.usage, dict):
            self.usage = chunk.usage
        if isinstance(chunk.timings, dict):
            self.timings = chunk.timings
        return reasoning, text

    def _take_spec_details(self, sglext: Any) -> None:
        details = as_dict(sglext).get("spec_tokens_details")
        # One entry per choice when n > 1; SparkDash asks for one.
        details = details[0] if isinstance(details, list) and details else details
        if isinstance(details, dict):
            self.spec_details = details

    def figures(self) -> EngineFigures:
        figures = answer_figures(self.usage, self.timings, self.finish_reason)
        if self.spec_details:
            add_spec_details(figures, self.spec_details)
        return figures


def answer_figures(
    usage: dict[str, Any] | None, timings: dict[str, Any] | None, finish_reason: str | None
) -> EngineFigures:
    """The engine's figures from an answer's `usage` and (llama-server's) `timings`, either may be None."""
    usage = usage or {}
    details = usage.get("prompt_tokens_details")
    figures = EngineFigures(
        output_tokens=as_int(usage.get("completion_tokens")),
        prompt_tokens=as_int(usage.get("prompt_tokens")),
        cached_tokens=as_int(details.get("cached_tokens")) if isinstance(details, dict) else None,
        finish_reason=finish_reason,
        reasoning_tokens=usage_reasoning_tokens(usage),
    )
    if timings:
        add_timings(figures, timings)
    return figures


def usage_reasoning_tokens(usage: dict[str, Any]) -> int | None:
    """Reasoning tokens in a usage: OpenAI's completion_tokens_details (vLLM), or SGLang's own key."""
    details = as_dict(usage.get("completion_tokens_details"))
    counted = as_int(details.get("reasoning_tokens"))
    return counted if counted is not None else as_int(usage.get("reasoning_tokens"))


def add_timings(figures: EngineFigures, timings: dict[str, Any]) -> None:
    """Fill `figures` from llama-server's `timings`; usage counts, when present, are kept."""
    predicted_n = as_int(timings.get("predicted_n"))
    cache_n = as_int(timings.get("cache_n"))
    prompt_n = as_int(timings.get("prompt_n"))
    if figures.output_tokens is None:
        figures.output_tokens = predicted_n
    if figures.prompt_tokens is None and cache_n is not None and prompt_n is not None:
        figures.prompt_tokens = cache_n + prompt_n
    if cache_n is not None:
        figures.cached_tokens = cache_n
    figures.prompt_s = _seconds(timings.get("prompt_ms"))
    figures.decode_s = _seconds(timings.get("predicted_ms"))
    figures.decode_tps = as_float(timings.get("predicted_per_second"))
    _add_drafts(figures, timings, predicted_n)


def _add_drafts(figures: EngineFigures, timings: dict[str, Any], predicted_n: int | None) -> None:
    draft_n = as_int(timings.get("draft_n"))
    if not draft_n:  # llama-server omits the draft fields when nothing was drafted
        return
    accepted = as_int(timings.get("draft_n_accepted"))
    figures.draft_tokens = draft_n
    figures.accepted_tokens = accepted
    if predicted_n is not None and accepted is not None:
        # An estimate, replaced by the engine's counters for a lone request (counters.DraftCounters):
        # llama-server does not report its verification steps. Each step emits its accepted drafts
        # plus one token, and the first token comes from prefill; exact only when every step had a
        # non-empty draft (docs/metrics.md, Acceptance).
        figures.verifications = max(predicted_n - 1 - accepted, 0)


def add_spec_details(figures: EngineFigures, details: dict[str, Any]) -> None:
    """Drafted/accepted tokens, verifications and accepted drafts by position from SGLang's
    per-request `spec_*` fields (meta_info, or the /v1 stream's sglext.spec_tokens_details).

    `spec_correct_drafts_histogram[k]` counts the verifications that accepted exactly k drafts,
    so position i (from 0) was accepted by the verifications that accepted more than i.
    Nothing is set when the fields are absent (speculative decoding off: "not exposed").
    """
    verifications = as_int(details.get("spec_verify_ct"))
    proposed = as_int(details.get("spec_num_proposed_drafts"))
    if not verifications or verifications < 0 or proposed is None:
        return
    figures.verifications = verifications
    figures.draft_tokens = proposed
    figures.accepted_tokens = as_int(details.get("spec_num_correct_drafts"))
    counts = [as_int(n) for n in as_list(details.get("spec_correct_drafts_histogram"))]
    positions = proposed // verifications  # SGLang proposes the same number at every verification
    if counts and all(n is not None and n >= 0 for n in counts) and 0 < positions <= MAX_POSITIONS:
        figures.accepted_by_position = [sum(n or 0 for n in counts[i + 1:]) for i in range(positions)]


def _seconds(ms: Any) -> float | None:
    value = as_float(ms)
    return value / 1000 if value is not None else None


def raise_reported_error(data: dict[str, Any], url: str) -> None:
    """Raise the error an engine reports inside the stream: {"error": ...} or vLLM's {"object": "error"}."""
    error = data.get("error")
    if error is None and data.get("object") == "error":
        error = data
    if error is not None:
        message = error.get("message", error) if isinstance(error, dict) else error
        raise EngineError(f"{url} reported an error: {str(message)[:200]}")
