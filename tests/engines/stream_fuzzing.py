"""Feeding raw bytes to the engine clients' stream parsers, for the fuzz tests.

The bytes go through each client's own line splitter and parsers; only the HTTP transport is
left out, so a fuzzer gets through tens of thousands of answers in seconds. The one rule: a
stream ends in the engine's figures (after its chunks) or in EngineError with a reason.
"""
from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

from engines.clients import base, client_for
from engines.clients.base import Chunk, EngineClient, EngineError, EngineFigures, GenerationRequest
from engines.clients.sglang import SGLangClient

KINDS = ("ollama", "llama-server", "vllm", "sglang")
REQUEST = GenerationRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=8)


class StreamFeeder:
    """One client per engine kind and one event loop, reused for every input (clients are slow to make)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clients = {kind: client_for(kind, "http://engine.invalid") for kind in KINDS}

    def check(self, kind: str, pieces: list[bytes]) -> list[Chunk | EngineFigures]:
        """Parse the answer read in these pieces; [] when it ended in EngineError. Anything else raises."""
        items = self.loop.run_until_complete(self._consume(self.clients[kind], pieces))
        if items:
            assert isinstance(items[-1], EngineFigures), items[-1]
            assert all(isinstance(item, Chunk) for item in items[:-1])
        return items

    async def _consume(self, client: EngineClient, pieces: list[bytes]) -> list[Chunk | EngineFigures]:
        async def lines(path: str, body: dict[str, Any]) -> AsyncIterator[tuple[float, str]]:
            async for line in base._utf8_lines(_reads(pieces)):
                yield base.now(), line

        async def rendered(request: GenerationRequest) -> list[int]:
            return [2, 3]

        client._stream_lines = lines  # type: ignore[method-assign]
        if isinstance(client, SGLangClient):  # its native path asks /tokenize first
            client.render_prompt = rendered  # type: ignore[method-assign]
        try:
            return [item async for item in client.stream(REQUEST)]
        except EngineError:
            return []


async def _reads(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def cut(body: bytes, cuts: list[int]) -> list[bytes]:
    """The body as the network might deliver it: split at these offsets."""
    points = sorted({min(max(c, 0), len(body)) for c in cuts} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(points)]
