"""The relay's model list, model details and version, from the engine's own, in the client's API.

An engine of the client's own API is asked the same path and its answer passes on unchanged;
otherwise Ollama's /api/tags and /api/show are made from /v1/models, and /v1/models from
/api/tags. Ollama's /api/version reports the engine's version where its kind tells it.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engines import kinds
from engines.clients.base import as_dict, as_list

from .upstream import Upstream, UpstreamError, Wire

__all__ = ["RELAY_VERSION", "model_details", "models", "tags", "version"]

# What /api/version says when the engine behind tells no version: an Ollama client checks it is
# recent enough for tools and thinking.
RELAY_VERSION = "0.30.0"


async def version(wire: Wire, up: Upstream) -> dict[str, Any]:
    """Ollama's {"version": ...}: the engine's own where it tells one."""
    if up.api == "ollama":
        return as_dict(await wire.json(up, "GET", "/api/version"))
    spec = kinds.find(up.engine_kind)
    for path, key in spec.version_paths if spec else ():
        try:
            value = as_dict(await wire.json(up, "GET", path)).get(key)
        except UpstreamError:
            continue
        if value:
            return {"version": RELAY_VERSION, "engine": f"{spec.name if spec else ''} {value}".strip()}
    return {"version": RELAY_VERSION}


async def _openai_models(wire: Wire, up: Upstream) -> list[dict[str, Any]]:
    listed = as_list(as_dict(await wire.json(up, "GET", "/v1/models")).get("data"))
    return [m for m in listed if isinstance(m, dict)]


async def tags(wire: Wire, up: Upstream) -> dict[str, Any]:
    """Ollama's /api/tags."""
    if up.api == "ollama":
        return as_dict(await wire.json(up, "GET", "/api/tags"))
    return {"models": [_tag(m) for m in await _openai_models(wire, up)]}


def _tag(model: dict[str, Any]) -> dict[str, Any]:
    meta = as_dict(model.get("meta"))
    created = model.get("created")
    stamp = datetime.fromtimestamp(created if isinstance(created, int) else 0, UTC)
    return {
        "name": model.get("id"),
        "model": model.get("id"),
        "modified_at": stamp.isoformat().replace("+00:00", "Z"),
        "size": meta.get("size", 0),
        "digest": "",
        "details": {"format": "gguf" if meta else "", "family": "", "families": [],
                    "parameter_size": _parameter_size(meta.get("n_params")), "quantization_level": ""},
    }


def _parameter_size(n: Any) -> str:
    return f"{n / 1e9:.1f}B" if isinstance(n, int | float) and n else ""


async def model_details(wire: Wire, up: Upstream, body: dict[str, Any]) -> dict[str, Any]:
    """Ollama's /api/show for the model the body names."""
    if up.api == "ollama":
        return as_dict(await wire.json(up, "POST", "/api/show", body))
    name = body.get("model") or body.get("name")
    entries = await _openai_models(wire, up)
    entry = next((m for m in entries if m.get("id") == name), None)
    if entry is None:
        served = [m.get("id") for m in entries]
        raise UpstreamError(404, f"model {name!r} not found: the engine serves {served}")
    meta = as_dict(entry.get("meta"))
    context = meta.get("n_ctx_train") or entry.get("max_model_len")
    info: dict[str, Any] = {"general.architecture": "relayed"}
    info["general.parameter_count"] = meta.get("n_params")
    if context:
        info["relayed.context_length"] = context
    return {
        "modelfile": "", "parameters": "", "template": "",
        "details": _tag(entry)["details"],
        "model_info": info,
        "capabilities": ["completion", "tools"],
    }


async def models(wire: Wire, up: Upstream) -> dict[str, Any]:
    """OpenAI's /v1/models."""
    if up.api == "openai":
        return as_dict(await wire.json(up, "GET", "/v1/models"))
    listed = as_list(as_dict(await wire.json(up, "GET", "/api/tags")).get("models"))
    data = [_model(m) for m in listed if isinstance(m, dict)]
    return {"object": "list", "data": data}


def _model(tag: dict[str, Any]) -> dict[str, Any]:
    stamp = tag.get("modified_at")
    try:
        created = int(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp())
    except ValueError:
        created = 0
    name = tag.get("name") or tag.get("model")
    return {"id": name, "object": "model", "created": created, "owned_by": "ollama"}
