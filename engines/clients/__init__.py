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
    client = spec.client(spec, base_url, api_key, timeout, transport)
    client.engine_kind = spec.name  # what the measurement core asks the registry about
    return client
