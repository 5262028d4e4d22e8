"""One real vLLM (the CPU build `make engine` installs), for tests that need no lifecycle of their own."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.real_engine import VLLM, VLLM_CPU_FLAGS, VLLM_MODEL
from tests.shared_engine import SharedEngine

SHARED = {
    "speculative_method": "ngram", "lookahead": 4, "prefix_caching": True,
    "context_length": 2048, "parallel": 4, "extra_flags": VLLM_CPU_FLAGS,
}  # fmt: skip


def vllm_settings(**fields: Any) -> dict[str, Any]:
    """A vLLM config's settings: the converted Gemma 3 270M, 2048 context, the CPU flags."""
    return {"model": str(VLLM_MODEL), "context_length": 2048, "extra_flags": VLLM_CPU_FLAGS} | fields


def shared_vllm(log_path: Path) -> SharedEngine:
    """vLLM with ngram drafting (lookahead 4), prefix caching and 4 parallel requests."""
    return SharedEngine("vllm", VLLM, lambda **fields: vllm_settings(**SHARED) | fields, log_path)
