"""Engine API clients: `client_for(kind, base_url, api_key)` picks the one that speaks the engine's API."""
from engines.clients.base import (
    Chunk,
    EngineClient,
    EngineError,
    EngineFigures,
    Generation,
    GenerationRequest,
)

__all__ = [
    "Chunk",
    "EngineClient",
    "EngineError",
    "EngineFigures",
    "Generation",
    "GenerationRequest",
    "client_for",
]


def client_for(kind: str, base_url: str, api_key: str = "", timeout: float = 300.0) -> EngineClient:
    """The client for an engine kind: Ollama's native API, or the OpenAI-compatible one."""
    from engines.clients.ollama import OllamaClient
    from engines.clients.openai import OpenAIClient

    if kind == "ollama":
        return OllamaClient(base_url, api_key, timeout)
    if kind in ("llama-server", "sglang", "vllm"):
        return OpenAIClient(base_url, api_key, timeout, flavour=kind)
    raise ValueError(f"unknown engine kind {kind!r}")
