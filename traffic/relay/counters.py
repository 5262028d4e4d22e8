"""The engine's side of a relayed request from its /metrics, for engines whose answers carry no
timings (vLLM: engines.kinds says `figures_from_counters`).

As engines.clients.counters does for runs, a request that ran alone gets its figures from the
counters' change across it (decode and prefill time, time to first token, cached prompt tokens,
drafts); one that overlapped another gets none. Unlike a run, the relay must not delay a request
to read the counters first: the snapshot taken after the previous request settled, while nothing
was in flight, is the next request's "before". The first request after start, or after overlap,
goes without (and leaves a fresh snapshot for the next). Reading happens after the client has its
last byte, so it never adds to what the client waits for.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from engines import kinds
from engines.clients.base import EngineError, EngineFigures
from engines.clients.counters import with_counters
from engines.counters_text import engine_samples, parse_counters, request_delta

from .upstream import Upstream, UpstreamError, Wire

__all__ = ["Counters", "Ticket"]

SETTLE_POLL_S = 0.05
SETTLE_TRIES = 40  # 2 s: the counters land just after the last chunk


@dataclass
class _Engine:
    """One engine's requests in flight, and its counters when last seen idle and settled."""

    in_flight: int = 0
    started: int = 0
    idle: dict[str, float] | None = None


@dataclass(frozen=True)
class Ticket:
    """A request whose figures may come from the counters: its engine, and the snapshot before it."""

    up: Upstream
    prefix: str
    before: dict[str, float] | None
    number: int


class Counters:
    """Counter snapshots per engine (keyed by its URL)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.engines: dict[str, _Engine] = {}

    def start(self, up: Upstream) -> Ticket | None:
        """A request to `up` begins; None when its kind's answers carry their own figures."""
        spec = kinds.find(up.engine_kind)
        if spec is None or not spec.figures_from_counters or not spec.counters_prefix:
            return None
        engine = self.engines.setdefault(up.base_url, _Engine())
        engine.in_flight += 1
        engine.started += 1
        before = engine.idle if engine.in_flight == 1 else None
        engine.idle = None  # counters seen before this request are no request's "before" now
        return Ticket(up, spec.counters_prefix, before, engine.started)

    async def finish(self, ticket: Ticket, figures: EngineFigures | None) -> EngineFigures | None:
        """The request ended (its client has everything): `figures` completed from the counters
        when it ran alone and got an answer; as given otherwise."""
        engine = self.engines[ticket.up.base_url]
        try:
            tokens = figures.output_tokens if figures else None
            after = await self._settled(ticket, tokens) if engine.in_flight == 1 else None
        finally:
            engine.in_flight -= 1
        alone = engine.started == ticket.number  # no request started since this one
        if after is not None and alone and engine.in_flight == 0:
            engine.idle = after
        if figures is None or after is None or ticket.before is None or not alone:
            return figures
        return with_counters(figures, ticket.before, after, ticket.prefix)

    async def _sample(self, ticket: Ticket) -> dict[str, float] | None:
        try:
            text = (await self.wire.read(ticket.up, "GET", "/metrics")).decode(errors="replace")
            return engine_samples(parse_counters(text), ticket.prefix)
        except (UpstreamError, EngineError):
            return None  # no counters: the record keeps the figures the answer had

    async def _settled(self, ticket: Ticket, tokens: int | None) -> dict[str, float] | None:
        """A snapshot once the request is counted; with no "before", once two snapshots agree."""
        previous = None
        for _ in range(SETTLE_TRIES):
            after = await self._sample(ticket)
            if after is None:
                return None
            if ticket.before is None:
                if after == previous:
                    return after
            else:
                delta = request_delta(ticket.before, after, ticket.prefix)
                if delta is None:
                    return None
                if delta.finished >= 1 and (tokens is None or delta.generated >= tokens):
                    return after
            previous = after
            await asyncio.sleep(SETTLE_POLL_S)
        return None
