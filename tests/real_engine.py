"""Where `make engine` put the real llama-server and the Gemma 3 270M GGUF, for real-engine tests."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

CACHE = Path(os.getenv("SPARKDASH_ENGINE_CACHE", Path.home() / ".cache" / "sparkdash" / "engine"))
LLAMA_SERVER = CACHE / "bin" / "llama-server"
GEMMA_270M = CACHE / "models" / "gemma3-270m-q4_k_m.gguf"

requires_engine = pytest.mark.skipif(
    not (LLAMA_SERVER.exists() and GEMMA_270M.exists()),
    reason=f"no llama-server/model in {CACHE}: run `make engine` (make test does)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
