"""The engine client seam: one request in, client timestamps and the engine's own figures out.

Plain async Python with no Django import, so the measurement core is testable alone.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

__all__ = [
    "Chunk",
    "EngineClient",
    "EngineError",
    "EngineFigures",
    "Generation",
    "GenerationRequest",
    "now",
]


def now() -> float:
    """The client clock every timestamp is taken with (monotonic, seconds)."""
    return time.perf_counter()


class EngineError(Exception):
    """A request to an engine failed; the message is a reason a user can read."""


@dataclass(frozen=True)
class GenerationRequest:
    """One chat request, with fixed sampling."""

    model: str
    messages: list[dict[str, Any]]
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """One piece of streamed content, stamped with the client clock when it arrived."""

    t: float
    text: str


@dataclass
class EngineFigures:
    """The engine's own counts for one request; None where the engine does not report it."""

    output_tokens: int | None = None
    prompt_tokens: int | None = None  # prompt tokens sent, cached ones included
    cached_tokens: int | None = None  # prompt tokens reused from the engine's cache
    prompt_s: float | None = None  # engine time spent on the new (uncached) prompt tokens
    decode_s: float | None = None  # engine time spent generating
    decode_tps: float | None = None  # the engine's own decode speed figure
    draft_tokens: int | None = None  # speculative tokens drafted
    accepted_tokens: int | None = None  # drafted tokens the target model accepted
    verifications: int | None = None  # target forward passes that verified a draft
    finish_reason: str | None = None  # "stop", "length", ... as the engine says


@dataclass
class Generation:
    """What one streamed request produced, as seen by the client and told by the engine."""

    sent_at: float
    chunks: list[Chunk]
    finished_at: float
    figures: EngineFigures

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.chunks)

    @property
    def first_token_at(self) -> float | None:
        return next((c.t for c in self.chunks if c.text), None)

    @property
    def last_token_at(self) -> float | None:
        return next((c.t for c in reversed(self.chunks) if c.text), None)


class EngineClient(ABC):
    """An engine's HTTP API. Subclasses parse one wire format; all share httpx and errors."""

    kind: ClassVar[str]

    def __init__(self, base_url: str, api_key: str = "", timeout: float = 300.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
        )

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    @abstractmethod
    def stream(self, request: GenerationRequest) -> AsyncIterator[Chunk | EngineFigures]:
        """Send the request; yield content chunks as they arrive, then the engine's figures.

        Raises EngineError for a dead engine, an HTTP error, a malformed or cut-off stream.
        """

    async def generate(self, request: GenerationRequest) -> Generation:
        """Run one request to the end and collect its chunks and the engine's figures."""
        chunks: list[Chunk] = []
        figures = EngineFigures()
        sent_at = now()
        async for item in self.stream(request):
            if isinstance(item, Chunk):
                chunks.append(item)
            else:
                figures = item
        return Generation(sent_at=sent_at, chunks=chunks, finished_at=now(), figures=figures)

    @abstractmethod
    async def version(self) -> str | None:
        """The engine's version string, or None when it does not say."""

    @abstractmethod
    async def model_info(self, model: str) -> dict[str, Any]:
        """What the engine says about a model: at least `id`, and `digest` where known."""
