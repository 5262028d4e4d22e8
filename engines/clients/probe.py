"""A connection test of an engine: what answers at its URL, before anyone saves or runs it.

Run by the worker of the engine's machine (the only box that may fetch the URL; runs.actions
.connection_checks dispatches it), never by the web server. No Django here.
"""
from __future__ import annotations

from typing import Any

from engines import kinds
from engines.clients import client_for
from engines.clients.base import EngineError
from engines.counters_text import spec_decode_delta

__all__ = ["PROBE_TIMEOUT_S", "probe"]

PROBE_TIMEOUT_S = 10.0


async def probe(kind: str, base_url: str, api_key: str = "") -> dict[str, Any]:
    """What the engine at `base_url` says of itself, asked in the API of `kind`.

    Returns reachable (bool) and, when it answered: api, models (names), version (None when it
    does not say) and spec_counters (whether its /metrics exposes speculative-decoding counters;
    None for a kind with none to expose); else error, the plain reason.
    """
    spec = kinds.get(kind)
    client = client_for(kind, base_url, api_key, PROBE_TIMEOUT_S)
    try:
        models = await client.models()
        version = await client.version()
        counters = await _spec_counters(client, spec.counters_prefix)
    except EngineError as exc:
        return {"reachable": False, "api": client.api, "error": str(exc)}
    finally:
        await client.aclose()
    return {"reachable": True, "api": client.api, "models": models, "version": version,
            "spec_counters": counters}


async def _spec_counters(client: Any, prefix: str | None) -> bool | None:
    if prefix is None:
        return None
    try:
        text = await client.counters_text()
    except EngineError:
        return False
    return text is not None and spec_decode_delta(text, text, prefix) is not None
