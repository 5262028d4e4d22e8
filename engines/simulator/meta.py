"""The simulator's metadata endpoints: version, model listings and server properties.

Every name that identifies the engine says "sparkdash-simulator", so a simulated run can never
be mistaken for a real engine in the dashboard or in stored provenance.
"""
from __future__ import annotations

import hashlib
from typing import Any

from .schedule import SimProfile

__all__ = ["META"]

VERSION = "0.0.0-sparkdash-simulator"
BUILD_INFO = "sparkdash-simulator"
PARAMETER_COUNT = 8_030_000_000
CONTEXT_LENGTH = 32768
DEFAULT_SIZE_GB = 4.9  # an 8B model at Q4_K_M


def _size_bytes(profile: SimProfile) -> int:
    return round((profile.model_gb or DEFAULT_SIZE_GB) * 1e9)


def _details() -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": "simulated",
        "families": ["simulated"],
        "parameter_size": "8.0B",
        "quantization_level": "Q4_K_M",
    }


def ollama_version(profile: SimProfile) -> dict[str, Any]:
    return {"version": VERSION}


def ollama_tags(profile: SimProfile) -> dict[str, Any]:
    model = {
        "name": profile.model,
        "model": profile.model,
        "modified_at": "2026-01-01T00:00:00Z",
        "size": _size_bytes(profile),
        "digest": hashlib.sha256(f"{BUILD_INFO}/{profile.model}".encode()).hexdigest(),
        "details": _details(),
        "capabilities": ["completion"],
    }
    return {"models": [model]}


def ollama_show(profile: SimProfile) -> dict[str, Any]:
    info: dict[str, Any] = {
        "general.architecture": "simulated",
        "general.parameter_count": PARAMETER_COUNT,
        "general.file_type": 15,
        "general.quantization_version": 2,
        "simulated.context_length": CONTEXT_LENGTH,
        "simulated.block_count": 32,
        "simulated.embedding_length": 4096,
        "simulated.attention.head_count": 32,
        "simulated.attention.head_count_kv": 8,
    }
    parameters = ""
    if profile.lookahead:
        # Reads as an embedded-MTP model drafting `lookahead` tokens.
        info["simulated.nextn_predict_layers"] = 1
        parameters = f"draft_num_predict {profile.lookahead}"
    return {
        "modelfile": f"# {BUILD_INFO}: no weights, timings from a schedule\nFROM {profile.model}\n",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": _details(),
        "model_info": info,
        "tensors": [],
        "capabilities": ["completion"],
        "modified_at": "2026-01-01T00:00:00Z",
    }


def openai_models(profile: SimProfile) -> dict[str, Any]:
    meta = {"n_params": PARAMETER_COUNT, "size": _size_bytes(profile), "n_ctx_train": CONTEXT_LENGTH}
    model = {"id": profile.model, "object": "model", "created": 0, "owned_by": "llamacpp", "meta": meta}
    return {"object": "list", "data": [model]}


def llama_props(profile: SimProfile) -> dict[str, Any]:
    params = {"n_predict": -1, "seed": 0, "speculative.n_max": profile.lookahead}
    return {
        "build_info": BUILD_INFO,
        "model_alias": profile.model,
        "model_path": f"/{BUILD_INFO}/{profile.model}.gguf",
        "total_slots": 1,
        "default_generation_settings": {"n_ctx": CONTEXT_LENGTH, "params": params},
        "modalities": {"vision": False, "audio": False},
        "chat_template": "",
        "is_sleeping": False,
        "endpoint_metrics": True,
    }


def health(profile: SimProfile) -> dict[str, Any]:
    return {"status": "ok"}


META = {
    ("GET", "/api/version"): ollama_version,
    ("HEAD", "/api/version"): ollama_version,
    ("GET", "/api/tags"): ollama_tags,
    ("POST", "/api/show"): ollama_show,
    ("GET", "/v1/models"): openai_models,
    ("GET", "/props"): llama_props,
    ("GET", "/health"): health,
}
