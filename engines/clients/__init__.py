"""Engine API clients: `client_for(kind, base_url, api_key)` picks the one that speaks the engine's API."""
from __future__ import annotations

import httpx

from engines.clients.base import (
    Chunk,
    EngineClient,
    EngineError,
    EngineFigures,
    EngineHTTPError,
    Generation,
    GenerationRequest,
)

__all__ = [
    "Chunk",
    "EngineClient",
    "EngineError",
    "EngineFigures",
    "EngineHTTPError",
    "Generation",
    "GenerationRequest",
    "client_for",
]


def client_for(
    kind: str,
    base_url: str,
    api_key: str = "",
    timeout: float = 300.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> EngineClient:
    """The client for an engine kind: Ollama's native API, or the OpenAI-compatible one.

    :param transport: an httpx transport to use instead of the network (tests pass a MockTransport).
    """
    from engines.clients.ollama import OllamaClient
    from engines.clients.openai import OpenAIClient

    if kind == "ollama":
        return OllamaClient(base_url, api_key, timeout, transport)
    if kind in OpenAIClient.flavours:
        return OpenAIClient(base_url, api_key, timeout, transport, flavour=kind)
    raise ValueError(f"unknown engine kind {kind!r}")
