"""Engine API clients: `client_for(kind, base_url, api_key)` picks the one that speaks the engine's API."""
from __future__ import annotations

import httpx

from engines import kinds
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
    "ollama_native",
    "openai_compatible",
    "sglang_native",
]


def client_for(
    kind: str,
    base_url: str,
    api_key: str = "",
    timeout: float = 300.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> EngineClient:
    """The client for an engine kind, as its registry entry makes it (engines.kinds).

    :param transport: an httpx transport to use instead of the network (tests pass a MockTransport).
    :raises ValueError: "unknown engine kind ..." for a kind the registry lacks.
    """
    spec = kinds.get(kind)
    client: EngineClient = spec.make_client(base_url, api_key, timeout, transport)
    client.engine_kind = spec.name  # what the measurement core asks the registry about
    return client


def openai_compatible(
    kind: kinds.EngineKind, base_url: str, api_key: str, timeout: float,
    transport: httpx.AsyncBaseTransport | None,
) -> EngineClient:
    """The OpenAI-compatible client, as `kind`'s flavour."""
    from engines.clients.openai import OpenAIClient

    return OpenAIClient(base_url, api_key, timeout, transport, flavour=kind.name)


def ollama_native(
    kind: kinds.EngineKind, base_url: str, api_key: str, timeout: float,
    transport: httpx.AsyncBaseTransport | None,
) -> EngineClient:
    """The client for Ollama's native API."""
    from engines.clients.ollama import OllamaClient

    return OllamaClient(base_url, api_key, timeout, transport)


def sglang_native(
    kind: kinds.EngineKind, base_url: str, api_key: str, timeout: float,
    transport: httpx.AsyncBaseTransport | None,
) -> EngineClient:
    """SGLang's client: its native /generate, whose answers carry each request's engine figures."""
    from engines.clients.sglang import SGLangClient

    return SGLangClient(base_url, api_key, timeout, transport)
