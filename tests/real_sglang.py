"""One real SGLang (the CPU build `make engine` installs), for tests that need no lifecycle of their own."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.real_engine import SGLANG, SGLANG_CPU_FLAGS, VLLM_MODEL
from tests.shared_engine import SharedEngine

SHARED = {"speculative_method": "NGRAM", "lookahead": 3, "parallel": 4}  # --speculative-num-draft-tokens 4


def sglang_settings(**fields: Any) -> dict[str, Any]:
    """An SGLang config's settings: Gemma 3 270M (converted for vLLM), 4096 context, the CPU flags."""
    return {"model": str(VLLM_MODEL), "context_length": 4096, "extra_flags": SGLANG_CPU_FLAGS} | fields


def shared_sglang(log_path: Path) -> SharedEngine:
    """SGLang with NGRAM drafting (lookahead 3), its radix cache and 4 parallel requests."""
    return SharedEngine("sglang", SGLANG, lambda **fields: sglang_settings(**SHARED) | fields, log_path)
