"""An engine's side of a request read from its `/metrics`, for engines whose replies carry no timings.

vLLM answers a streamed request with token counts only; its decode time, prefill time, time to
first token and draft counts are in its Prometheus counters. llama-server's reply counts drafted
and accepted tokens but not its verification steps. A request sent while no other request of this
client is in flight gets them from the counters' change across it; one that overlapped another
gets none (the change would mix both). Definitions: docs/metrics.md.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from engines import kinds
from engines.clients.base import EngineClient, EngineError, EngineFigures, Generation, GenerationRequest
from engines.counters_text import (
    RequestDelta,
    SpecDelta,
    engine_samples,
    parse_counters,
    request_delta,
    spec_decode_delta,
)
from measure import pooled

__all__ = ["DraftCounters", "LoneRequests", "RequestCounters", "settled_counters", "spec_since"]

SETTLE_POLL_S = 0.05
SETTLE_TRIES = 40  # 2 s: the counters land just after the last chunk
# llama-server replies after which, if none of them drafted, its counters are no longer read around
# each request (a launch without a draft model or n-gram drafting never drafts), until a reply
# drafts: one /metrics read per request was a tenth of the measuring loop's CPU at one stream
# (issue 41's profile). That first drafting reply keeps its reply's figures; once one has drafted,
# the counters are read around every lone request.
QUIET_REPLIES = 3


async def settled_counters(client: EngineClient, prefix: str, tries: int = 10) -> str | None:
    """Counters can land just after the last answer: read until two snapshots of the engine's own
    counters (names under `prefix`) agree."""
    previous = await client.counters_text()
    seen = _own_counters(previous, prefix)
    for _ in range(tries):
        await asyncio.sleep(0.1)
        current = await client.counters_text()
        counters = _own_counters(current, prefix)
        if counters == seen:
            break
        previous, seen = current, counters
    return previous


def _own_counters(text: str | None, prefix: str) -> dict[str, float] | None:
    return engine_samples(parse_counters(text), prefix) if text else None


async def spec_since(client: EngineClient, before: str | None) -> SpecDelta | None:
    """The speculative counts the engine added since the snapshot `before` (a `counters_text()`).

    None when the engine kind exports no such counters, `before` is None, or the engine stopped
    answering (no counters to read is no failure of the run).
    """
    spec = kinds.find(client.engine_kind)
    prefix = spec.counters_prefix if spec else None
    if before is None or prefix is None:
        return None
    try:
        after = await settled_counters(client, prefix)
        return spec_decode_delta(before, after, prefix) if after else None
    except EngineError:
        return None


class LoneRequests:
    """Wraps a client's `generate` so that a request sent while no other of this client was in
    flight is completed from the engine's `/metrics` change across it (`complete`); a request that
    overlapped another keeps what its reply said.

    Lone requests one after another read the counters once each, not twice: the snapshot taken
    after one is the next one's before, unless another request of this client started between.
    """

    def __init__(self, client: EngineClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.in_flight = 0
        self.started = 0
        self.held: tuple[int, dict[str, float]] | None = None  # (request number, counters after it)

    async def generate(
        self, send: Callable[[GenerationRequest], Awaitable[Generation]], request: GenerationRequest
    ) -> Generation:
        """`send(request)`, its figures completed from the counters when it ran alone."""
        alone, ticket = self.in_flight == 0, self.started + 1
        held = self.held[1] if self.held and self.held[0] == self.started else None
        self.in_flight, self.started, self.held = self.in_flight + 1, ticket, None
        try:
            before = (held or await self._samples()) if alone and self.wanted(None) else None
            gen = await send(request)
            self.replied(gen)
            if before is None or self.started != ticket or not self.wanted(gen):
                return gen
            after = await self._settled(before, gen)
        finally:
            self.in_flight -= 1
        if after is not None and self.started == ticket:
            self.held = (ticket, after)
            gen.figures = self.complete(gen.figures, before, after)
        return gen

    def wanted(self, gen: Generation | None) -> bool:
        """Whether the counters are worth reading for this request (None: before it is sent)."""
        return True

    def replied(self, gen: Generation) -> None:
        """Learn from a reply, whether it ran alone or not."""

    def counted(self, before: dict[str, float], after: dict[str, float], gen: Generation) -> bool | None:
        """Whether `after` holds all of the request (None: never will, stop waiting)."""
        raise NotImplementedError

    def complete(
        self, figures: EngineFigures, before: dict[str, float], after: dict[str, float]
    ) -> EngineFigures:
        """`figures` with what the counters say of the request filled in."""
        raise NotImplementedError

    async def _samples(self) -> dict[str, float] | None:
        try:
            text = await self.client.counters_text()
            return parse_counters(text) if text else None
        except EngineError:
            return None  # no counters: the request keeps the figures its reply had

    async def _settled(self, before: dict[str, float], gen: Generation) -> dict[str, float] | None:
        """The snapshot once the request is counted, or None."""
        for _ in range(SETTLE_TRIES):
            after = await self._samples()
            done = self.counted(before, after, gen) if after else None
            if done is None:
                return None
            if done:
                return after
            await asyncio.sleep(SETTLE_POLL_S)
        return None


class RequestCounters(LoneRequests):
    """vLLM: a lone request's decode and prefill time, time to first token and draft counts, which
    its replies do not carry."""

    def counted(self, before: dict[str, float], after: dict[str, float], gen: Generation) -> bool | None:
        delta = request_delta(before, after, self.prefix)
        if delta is None:
            return None
        tokens = gen.figures.output_tokens
        return delta.finished >= 1 and (tokens is None or delta.generated >= tokens)

    def complete(
        self, figures: EngineFigures, before: dict[str, float], after: dict[str, float]
    ) -> EngineFigures:
        return with_counters(figures, before, after, self.prefix)


class DraftCounters(LoneRequests):
    """llama-server: a lone drafting request's verifications and accepted tokens by position.

    Its reply counts drafted and accepted tokens but not the verification steps; the estimate from
    the output count (a step per token not accepted) also counts the steps that had no draft, so
    n-gram drafting read 6.01 tokens per verification where the engine counted 6.75
    (docs/metrics.md, Acceptance). The counters' change is taken only when its drafted and accepted
    tokens are the reply's own: anything else is another client's request mixed in.
    """

    def __init__(self, client: EngineClient, prefix: str) -> None:
        super().__init__(client, prefix)
        self.replies, self.drafted = 0, False

    def wanted(self, gen: Generation | None) -> bool:
        if gen is None:  # an engine that has not drafted is not asked before every request
            return self.drafted or self.replies < QUIET_REPLIES
        return bool(gen.figures.draft_tokens)

    def replied(self, gen: Generation) -> None:
        self.replies += 1
        self.drafted = self.drafted or bool(gen.figures.draft_tokens)

    def counted(self, before: dict[str, float], after: dict[str, float], gen: Generation) -> bool | None:
        spec = spec_decode_delta(before, after, self.prefix)
        if spec is None:
            return None  # no speculative counters (llama.cpp before b10282)
        return (spec.draft_tokens, spec.accepted) == (gen.figures.draft_tokens, gen.figures.accepted_tokens)

    def complete(
        self, figures: EngineFigures, before: dict[str, float], after: dict[str, float]
    ) -> EngineFigures:
        return replace(figures, **_spec_fields(spec_decode_delta(before, after, self.prefix)))


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
        pooled.DRAFT_TOKENS: spec.draft_tokens,
        pooled.ACCEPTED_TOKENS: spec.accepted,
        pooled.VERIFICATIONS: spec.drafts,
        pooled.ACCEPTED_BY_POSITION: list(spec.accepted_by_position) or None,
    }
