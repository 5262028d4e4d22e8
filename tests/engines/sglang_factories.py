"""SGLang's native answers as it sends them (POST /tokenize, streamed POST /generate), for client tests.

The shapes follow SGLang 0.5.23's own answers, as read from the real CPU server (`make engine`):
every chunk of a streamed /generate is `data: {"text", "output_ids", "meta_info"}`, the text is the
whole answer so far, and the last chunk's meta_info holds the request's figures.
"""
from __future__ import annotations

from typing import Any

import httpx

from tests.engines.stream_factories import SSE, serve, sse


def meta_info(
    completion_tokens: int,
    *,
    prompt_tokens: int = 26,
    cached_tokens: int = 0,
    first_token_latency: float = 0.1,
    e2e_latency: float | None = None,
    prefill_s: float = 0.09,
    finish: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A finished request's meta_info; decode_throughput follows SGLang's (n - 1) ÷ decode time."""
    e2e = e2e_latency if e2e_latency is not None else first_token_latency + 0.08 * (completion_tokens - 1)
    info: dict[str, Any] = {
        "id": "5f0c", "finish_reason": finish or {"type": "length", "length": completion_tokens},
        "prompt_tokens": prompt_tokens, "weight_version": "default", "total_retractions": 0,
        "completion_tokens": completion_tokens, "cached_tokens": cached_tokens,
        "e2e_latency": e2e, "queue_time": 0.0015, "first_token_latency": first_token_latency,
        "forward_entry_time": 1796192567.5, "prefill_finished_time": 1796192567.5 + prefill_s,
        "reasoning_tokens": 0, "cached_tokens_details": {"device": cached_tokens, "host": 0},
        "request_received_ts": 1796192567.49,
    }  # fmt: skip
    if completion_tokens > 1:
        info["decode_throughput"] = (completion_tokens - 1) / (e2e - first_token_latency)
    return info | extra


def spec_fields(histogram: list[int], draft_positions: int) -> dict[str, Any]:
    """The spec_* fields of a request whose verifications accepted k drafts histogram[k] times."""
    verify = sum(histogram)
    accepted = sum(k * n for k, n in enumerate(histogram))
    proposed = verify * draft_positions
    return {
        "spec_verify_ct": verify, "spec_num_correct_drafts": accepted,
        "spec_num_proposed_drafts": proposed, "spec_accept_rate": accepted / proposed,
        "spec_correct_drafts_histogram": histogram,
    }  # fmt: skip


def generate_stream(
    pieces: list[str], final: dict[str, Any] | None, *, cumulative: bool = True, done: bool = True
) -> bytes:
    """A streamed /generate answer: one chunk a piece, meta_info growing, `final` on the last one."""
    events: list[dict[str, Any] | str] = []
    text = ""
    for n, piece in enumerate(pieces, 1):
        text += piece
        running = {"completion_tokens": n, "prompt_tokens": 26, "finish_reason": None}
        last = n == len(pieces) and final is not None
        events.append({"text": text if cumulative else piece, "output_ids": list(range(n)),
                       "meta_info": final if last else running})  # fmt: skip
    return sse(*events, *(["[DONE]"] if done else []))


def tokenized(n_tokens: int = 12, max_model_len: int = 4096) -> dict[str, Any]:
    """/tokenize's answer for chat messages: the rendered prompt's ids."""
    return {"tokens": list(range(2, 2 + n_tokens)), "count": n_tokens, "max_model_len": max_model_len}


def native_engine(
    answer: bytes, *, prompt: dict[str, Any] | None = None, status: int = 200,
    seen: list[httpx.Request] | None = None,
) -> httpx.MockTransport:
    """A transport serving /tokenize and one streamed /generate answer (with this status)."""
    return serve({
        "POST /tokenize": httpx.Response(200, json=prompt or tokenized()),
        "POST /generate": httpx.Response(status, content=answer, headers=SSE),
    }, seen)  # fmt: skip
