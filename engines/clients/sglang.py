"""SGLang's native API, which tells each request's own engine figures.

A request is rendered by SGLang's own chat template (POST /tokenize with the messages, as its
/v1/chat/completions would render them) and streamed from POST /generate. The last chunk's
`meta_info` carries that request's figures: time to first token, decode speed, prompt and cached
tokens and, with speculative decoding, its drafted and accepted tokens, verifications and how
many verifications accepted 0, 1, 2 ... drafts (which gives acceptance per draft position).

A request the native API cannot carry (tools, response formats: any OpenAI-only field in
`extra`) goes to /v1/chat/completions as on any OpenAI-compatible engine; SGLang's stream there
carries the request's acceptance (`sglext.spec_tokens_details`) but no timings.
Definitions: docs/metrics.md ("SGLang").
"""
from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, ClassVar

import httpx

from engines.clients import base
from engines.clients.base import (
    Chunk,
    EngineError,
    EngineFigures,
    EngineHTTPError,
    GenerationRequest,
    as_dict,
    as_float,
    as_int,
    as_list,
    stopped_mid_answer,
)
from engines.clients.openai import OpenAIClient, add_spec_details
from engines.clients.reasoning import ThinkSplitter
from engines.errors import EngineMalformed

__all__ = ["SGLangClient", "meta_info_figures"]

# `extra` keys the native API takes as sampling parameters; any other key sends the request to /v1.
SAMPLING_EXTRAS = frozenset({"ignore_eos", "stop", "min_tokens", "stop_token_ids", "repetition_penalty"})
RENAMED = {"min_tokens": "min_new_tokens"}


class SGLangClient(OpenAIClient):
    """SGLang: native /generate for plain requests, its OpenAI-compatible API for the rest."""

    api: ClassVar[str] = "sglang"

    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        timeout: float = 300.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, transport, flavour="sglang")

    async def stream(self, request: GenerationRequest) -> AsyncIterator[Chunk | EngineFigures]:
        if not set(request.extra) <= SAMPLING_EXTRAS:
            async for item in super().stream(request):
                yield item
            return
        input_ids = await self.render_prompt(request)
        async with aclosing(self._native(self.generate_body(request, input_ids))) as items:
            async for item in items:
                yield item

    async def render_prompt(self, request: GenerationRequest) -> list[int]:
        """The prompt's token ids by SGLang's chat template; EngineHTTPError (400) when it does
        not fit the context length, before anything is generated."""
        body: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        data = await self._post_object("/tokenize", body)
        tokens = as_list(data.get("tokens"))
        if not tokens or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
            raise EngineMalformed(f"malformed answer from {self.base_url}/tokenize: no token ids")
        limit = as_int(data.get("max_model_len"))
        if limit is not None and len(tokens) + 1 > limit:
            raise EngineHTTPError(
                f"{self.base_url}: the prompt is {len(tokens)} tokens, over the engine's context "
                f"length of {limit} (nothing was generated)",
                400,
            )
        return tokens

    def generate_body(self, request: GenerationRequest, input_ids: list[int]) -> dict[str, Any]:
        """The /generate body: the rendered prompt's ids and the request's sampling."""
        sampling: dict[str, Any] = {"max_new_tokens": request.max_tokens, "temperature": request.temperature}
        optional = {"top_p": request.top_p, "top_k": request.top_k, "sampling_seed": request.seed}
        sampling.update({key: value for key, value in optional.items() if value is not None})
        sampling.update({RENAMED.get(key, key): value for key, value in request.extra.items()})
        return {"input_ids": input_ids, "sampling_params": sampling, "stream": True}

    async def _native(self, body: dict[str, Any]) -> AsyncGenerator[Chunk | EngineFigures, None]:
        think, text = ThinkSplitter(), _Text()
        meta: dict[str, Any] = {}
        done, t = False, base.now()
        async with aclosing(self.sse_objects("/generate", body)) as objects:
            async for t, data in objects:
                if data is None:
                    done = True
                    break
                meta = as_dict(data.get("meta_info")) or meta
                for chunk in think.feed(t, text.new(data.get("text"))):
                    text.n_chunks += 1
                    yield chunk
        finish = as_dict(meta.get("finish_reason"))
        if not done or not finish:
            raise stopped_mid_answer(text.n_chunks)
        if finish.get("type") == "abort":
            raise EngineError(f"{self.base_url} aborted the request: {str(finish.get('message'))[:200]}")
        for chunk in think.finish(t):
            yield chunk
        yield meta_info_figures(meta)


class _Text:
    """What part of a /generate chunk's `text` is new: SGLang streams the whole answer so far,
    or (served with --incremental-streaming-output) only the new piece."""

    def __init__(self) -> None:
        self.seen = ""
        self.n_chunks = 0

    def new(self, text: Any) -> str:
        if not isinstance(text, str):
            return ""
        if text.startswith(self.seen):
            piece, self.seen = text[len(self.seen):], text
            return piece
        self.seen += text
        return text


def meta_info_figures(meta: dict[str, Any]) -> EngineFigures:
    """The engine's figures for one request from a /generate answer's `meta_info`."""
    ttft = as_float(meta.get("first_token_latency"))
    e2e = as_float(meta.get("e2e_latency"))
    # When the scheduler began the request's prefill and when the prefill was done (wall clock).
    entered, prefilled = as_float(meta.get("forward_entry_time")), as_float(meta.get("prefill_finished_time"))
    figures = EngineFigures(
        output_tokens=as_int(meta.get("completion_tokens")),
        prompt_tokens=as_int(meta.get("prompt_tokens")),
        cached_tokens=as_int(meta.get("cached_tokens")),
        finish_reason=_finish(meta.get("finish_reason")),
        ttft_s=ttft,
        decode_tps=as_float(meta.get("decode_throughput")),
        decode_s=_span(ttft, e2e),
        prompt_s=_span(entered, prefilled),
        reasoning_tokens=as_int(meta.get("reasoning_tokens")),
    )
    add_spec_details(figures, meta)
    return figures


def _span(start: float | None, end: float | None) -> float | None:
    return end - start if start is not None and end is not None and end >= start else None


def _finish(reason: Any) -> str | None:
    """SGLang's finish_reason object ({"type": "length", ...}) as the plain word the others use."""
    finish_type = as_dict(reason).get("type")
    return str(finish_type) if finish_type else None
