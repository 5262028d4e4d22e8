"""GuideLLM's benchmarks report (v2 layout): JSON, YAML or CSV. Filled in from a real file below."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runs.core.imports.levels import PeerFile

__all__ = ["is_guidellm", "read_guidellm"]


def is_guidellm(data: Any) -> bool:
    return isinstance(data, Mapping) and "benchmarks" in data and "metadata" in data


def read_guidellm(data: Mapping[str, Any]) -> PeerFile:
    raise ValueError("not yet")
