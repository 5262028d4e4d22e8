"""Roofline ceiling of decode speed: memory bandwidth / bytes of weights read per token.

Decoding one token reads every active weight once, so a machine moving ``bandwidth_gbps`` GB/s
(decimal, 1 GB = 1e9 bytes, as bandwidth is quoted) cannot decode faster than
``bandwidth / bytes_per_token`` tokens a second. Efficiency is measured speed over that ceiling.
Seed figures: 273 GB/s / 28.6 GB = 9.5 tok/s; measured 7.9 tok/s = 83 %. With speculative
decoding one target pass (one read of the weights) emits `tokens_per_verification` tokens, so
the ceiling is that many times higher (draft cost left out: still an upper bound), and the
efficiency is measured against it; a 3x speed-up must not read as 300 % of the plain ceiling.
``bytes_per_token`` comes from ``engines.gguf_inspect`` or from the user, who may know better
(a runtime that keeps some weights elsewhere, KV-cache reads at long contexts).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engines.gguf_inspect import GGUFError, inspect_header

__all__ = ["GB", "Roofline", "ceiling_tps", "efficiency", "model_findings", "roofline"]

GB = 1e9


def ceiling_tps(bandwidth_gbps: float, bytes_per_token: float) -> float:
    """Upper bound on decode tokens/s for a bandwidth in GB/s and the bytes read per token."""
    if bandwidth_gbps <= 0:
        raise ValueError(f"bandwidth must be > 0 GB/s, not {bandwidth_gbps}")
    if bytes_per_token <= 0:
        raise ValueError(f"bytes per token must be > 0, not {bytes_per_token}")
    return bandwidth_gbps * GB / bytes_per_token


def efficiency(measured_tps: float, ceiling: float) -> float:
    """Measured tokens/s as a fraction of the ceiling (0.83 for 83 %)."""
    if ceiling <= 0:
        raise ValueError(f"ceiling must be > 0 tok/s, not {ceiling}")
    if measured_tps < 0:
        raise ValueError(f"measured speed must be >= 0 tok/s, not {measured_tps}")
    return measured_tps / ceiling


@dataclass(frozen=True)
class Roofline:
    bandwidth_gbps: float
    bytes_per_token: int
    bytes_source: str  # "gguf" (inspected) or "override" (given by the user)
    ceiling_tps: float
    measured_tps: float | None = None
    efficiency: float | None = None
    tokens_per_verification: float | None = None
    ceiling_with_drafts_tps: float | None = None  # ceiling_tps x tokens_per_verification, when > 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def roofline(
    bandwidth_gbps: float,
    bytes_per_token: int,
    override: int | None = None,
    measured_tps: float | None = None,
    tokens_per_verification: float | None = None,
) -> Roofline:
    """The ceiling for inspected ``bytes_per_token``, or the user's ``override`` of it when given.

    :param tokens_per_verification: the run's median with speculative decoding; above 1 it raises
        the ceiling the efficiency is measured against (ceiling_with_drafts_tps).
    """
    used = override if override is not None else bytes_per_token
    ceiling = ceiling_tps(bandwidth_gbps, used)
    per_pass = tokens_per_verification
    drafted = ceiling * per_pass if per_pass and per_pass > 1 else None
    against = drafted or ceiling
    eff = efficiency(measured_tps, against) if measured_tps is not None else None
    source = "override" if override is not None else "gguf"
    return Roofline(bandwidth_gbps, used, source, ceiling, measured_tps, eff, per_pass, drafted)


def model_findings(config: Any) -> dict[str, Any] | None:
    """What a config's GGUF holds (from its header alone) and its ceiling, when the model is a local file.

    :param config: an ``EngineConfig``-like object: ``model`` and ``engine.machine.bandwidth_gbps``.
    """
    if not Path(config.model).is_file():
        return None
    try:
        info = inspect_header(config.model).to_dict()
    except GGUFError as exc:
        return {"error": str(exc)}
    bandwidth = config.engine.machine.bandwidth_gbps
    info["ceiling_tps"] = ceiling_tps(bandwidth, info["bytes_per_token"]) if info["bytes_per_token"] else None
    return info
