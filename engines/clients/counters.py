"""An engine's side of a request read from its `/metrics`, for engines whose replies carry no timings.

vLLM answers a streamed request with token counts only; its decode time, prefill time, time to
first token and draft counts are in its Prometheus counters. A request sent while no other
request of this client is in flight gets them from the counters' change across it; one that
overlapped another gets none (the change would mix both). Definitions: docs/metrics.md.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from engines import kinds
from engines.clients.base import EngineClient, EngineError, EngineFigures, Generation, GenerationRequest
from engines.metrics_text import (
    RequestDelta,
    SpecDelta,
    engine_samples,
    parse_metrics,
    request_delta,
    spec_decode_delta,
)

__all__ = ["RequestCounters", "settled_metrics", "spec_since"]

SETTLE_POLL_S = 0.05
SETTLE_TRIES = 40  # 2 s: the counters land just after the last chunk


async def settled_metrics(client: EngineClient, prefix: str, tries: int = 10) -> str | None:
    """Counters can land just after the last answer: read until two snapshots of the engine's own
    counters (names under `prefix`) agree."""
    previous = await client.metrics_text()
    seen = _own_counters(previous, prefix)
    for _ in range(tries):
        await asyncio.sleep(0.1)
        current = await client.metrics_text()
        counters = _own_counters(current, prefix)
        if counters == seen:
            break
        previous, seen = current, counters
    return previous


def _own_counters(text: str | None, prefix: str) -> dict[str, float] | None:
    return engine_samples(parse_metrics(text), prefix) if text else None


async def spec_since(client: EngineClient, before: str | None) -> SpecDelta | None:
    """The speculative counts the engine added since the snapshot `before` (a `metrics_text()`).

    None when the engine kind exports no such counters, `before` is None, or the engine stopped
    answering (no counters to read is no failure of the run).
    """
    spec = kinds.find(client.engine_kind)
    prefix = spec.metrics_prefix if spec else None
    if before is None or prefix is None:
        return None
    try:
        after = await settled_metrics(client, prefix)
        return spec_decode_delta(before, after, prefix) if after else None
    except EngineError:
        return None


class RequestCounters:
    """Wraps a client's `generate` so that a lone request gets the engine's figures from `/metrics`."""

    def __init__(self, client: EngineClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.in_flight = 0
        self.started = 0

    async def generate(
        self, send: Callable[[GenerationRequest], Awaitable[Generation]], request: GenerationRequest
    ) -> Generation:
        """`send(request)`, its figures completed from the counters when it ran alone."""
        alone, ticket = self.in_flight == 0, self.started + 1
        self.in_flight += 1
        self.started = ticket
        try:
            before = await self._samples() if alone else None
            gen = await send(request)
            if before is None or self.started != ticket:
                return gen
            after = await self._settled(before, gen.figures.output_tokens)
        finally:
            self.in_flight -= 1
        if after is not None and self.started == ticket:
            gen.figures = with_counters(gen.figures, before, after, self.prefix)
        return gen

    async def _samples(self) -> dict[str, float] | None:
        try:
            text = await self.client.metrics_text()
            return parse_metrics(text) if text else None
        except EngineError:
            return None  # no counters: the request keeps the figures its reply had

    async def _settled(self, before: dict[str, float], tokens: int | None) -> dict[str, float] | None:
        """The snapshot once the request is counted (finished and all its tokens), or None."""
        for _ in range(SETTLE_TRIES):
            after = await self._samples()
            delta = request_delta(before, after, self.prefix) if after else None
            if delta is None:
                return None
            if delta.finished >= 1 and (tokens is None or delta.generated >= tokens):
                return after
            await asyncio.sleep(SETTLE_POLL_S)
        return None


def with_counters(
    figures: EngineFigures, before: dict[str, float], after: dict[str, float], prefix: str
) -> EngineFigures:
    """`figures` with what the counters say of one request filled in where the reply said nothing."""
    counted = request_delta(before, after, prefix)
    if counted is None or counted.finished != 1:
        return figures
    spec = spec_decode_delta(before, after, prefix)
    return replace(figures, **_request_fields(figures, counted), **_spec_fields(spec))


# Any: each value is its EngineFigures field's type, which a dict of mixed values can't say to mypy.
def _request_fields(figures: EngineFigures, counted: RequestDelta) -> dict[str, Any]:
    tokens = figures.output_tokens if figures.output_tokens is not None else counted.generated
    fields: dict[str, Any] = {"ttft_s": counted.ttft_s, "prompt_s": counted.prefill_s}
    if counted.decode_s > 0:
        fields["decode_s"] = counted.decode_s
        # (tokens - 1) / decode time: the first token ends the prefill, as on the client's side.
        fields["decode_tps"] = (tokens - 1) / counted.decode_s if tokens > 1 else None
    if figures.cached_tokens is None and counted.cached_tokens is not None:
        fields["cached_tokens"] = counted.cached_tokens
    return fields


def _spec_fields(spec: SpecDelta | None) -> dict[str, Any]:
    if spec is None or not spec.drafts:
        return {}
    return {
        "draft_tokens": spec.draft_tokens,
        "accepted_tokens": spec.accepted,
        "verifications": spec.drafts,
        "accepted_by_position": list(spec.accepted_by_position) or None,
    }
