"""Roofline ceiling of decode speed: memory bandwidth / bytes of weights read per token.

Decoding one token reads every active weight once, so a machine moving ``bandwidth_gbps`` GB/s
(decimal, 1 GB = 1e9 bytes, as bandwidth is quoted) cannot decode faster than
``bandwidth / bytes_per_token`` tokens a second. Efficiency is measured speed over that ceiling.
Seed figures: 273 GB/s / 28.6 GB = 9.5 tok/s; measured 7.9 tok/s = 83 %. With speculative
decoding one target pass (one read of the weights) emits `tokens_per_verification` tokens, so
the ceiling is that many times higher (draft cost left out: still an upper bound), and the
efficiency is measured against it; a 3x speed-up must not read as 300 % of the plain ceiling.
Where the machine has a measured bandwidth (the bandwidth job, runs.core.jobs.bandwidth.loop) a second
ceiling and efficiency are held against it: 231 GB/s measured of 273 nominal gives a ceiling
15 % lower. A measured speed above either ceiling (``above_ceiling``) means the inputs are wrong
(bytes per token too high: weights elsewhere, a smaller quantization) or the measured
bandwidth is a floor (a one-core CPU copy), not that the roofline was beaten.
``bytes_per_token`` comes from ``engines.gguf_inspect`` or from the user, who may know better
(a runtime that keeps some weights elsewhere, KV-cache reads at long contexts).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from engines.gguf_inspect import GGUFError, inspect_header
from engines.recipes.model_dirs import local_gguf

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
    """Both ceilings of one config on one machine and the measured speed held against them.

    The nominal ceiling uses the machine's quoted bandwidth; the measured_* fields its measured
    bandwidth (None where the machine has none). Each efficiency is against its ceiling times
    tokens per verification where that is above 1.
    """

    bandwidth_gbps: float
    bytes_per_token: int
    bytes_source: str  # "gguf" (inspected) or "override" (given by the user)
    ceiling_tps: float
    measured_tps: float | None = None
    efficiency: float | None = None
    tokens_per_verification: float | None = None
    ceiling_with_drafts_tps: float | None = None  # ceiling_tps x tokens_per_verification, when > 1
    measured_bandwidth_gbps: float | None = None
    measured_ceiling_tps: float | None = None
    measured_ceiling_with_drafts_tps: float | None = None
    measured_efficiency: float | None = None
    above_ceiling: bool = False  # the measured speed is above a ceiling it is held against

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def roofline(
    bandwidth_gbps: float,
    bytes_per_token: int,
    override: int | None = None,
    measured_tps: float | None = None,
    tokens_per_verification: float | None = None,
    measured_bandwidth_gbps: float | None = None,
) -> Roofline:
    """The ceiling for inspected ``bytes_per_token``, or the user's ``override`` of it when given.

    :param tokens_per_verification: the run's median with speculative decoding; above 1 it raises
        the ceiling the efficiency is measured against (ceiling_with_drafts_tps).
    :param measured_bandwidth_gbps: the machine's measured bandwidth: the second ceiling's
    """
    used = override if override is not None else bytes_per_token
    per_pass = tokens_per_verification
    ceiling, drafted, eff = _held_against(bandwidth_gbps, used, measured_tps, per_pass)
    measured: tuple[float | None, float | None, float | None] = (None, None, None)
    if measured_bandwidth_gbps:
        measured = _held_against(measured_bandwidth_gbps, used, measured_tps, per_pass)
    above = any(e is not None and e > 1 for e in (eff, measured[2]))
    source = "override" if override is not None else "gguf"
    return Roofline(bandwidth_gbps, used, source, ceiling, measured_tps, eff, per_pass, drafted,
                    measured_bandwidth_gbps or None, *measured, above_ceiling=above)


def _held_against(
    bandwidth_gbps: float, bytes_per_token: int, measured_tps: float | None, per_pass: float | None
) -> tuple[float, float | None, float | None]:
    """(ceiling, ceiling with drafts or None, efficiency against the one that applies or None)."""
    ceiling = ceiling_tps(bandwidth_gbps, bytes_per_token)
    drafted = ceiling * per_pass if per_pass and per_pass > 1 else None
    eff = efficiency(measured_tps, drafted or ceiling) if measured_tps is not None else None
    return ceiling, drafted, eff


def model_findings(config: Any) -> dict[str, Any] | None:
    """What a config's GGUF holds (from its header alone) and its ceiling, when the model is a GGUF file
    inside this machine's model directories (engines.recipes.model_dirs); None for anything else.

    :param config: an ``EngineConfig``-like object: ``model`` and ``engine.machine.bandwidth_gbps``
        (and ``measured_bandwidth_gbps``: the measured ceiling ``measured_ceiling_tps`` where set).
    """
    path = local_gguf(config.model)  # nothing outside the model directories, nothing but a GGUF, is read
    if path is None:
        return None
    try:
        info = inspect_header(path).to_dict()
    except GGUFError as exc:
        return {"error": str(exc)}
    machine, per_token = config.engine.machine, info["bytes_per_token"]
    measured = getattr(machine, "measured_bandwidth_gbps", None)
    info["ceiling_tps"] = ceiling_tps(machine.bandwidth_gbps, per_token) if per_token else None
    info["measured_ceiling_tps"] = ceiling_tps(measured, per_token) if per_token and measured else None
    info["measured_bandwidth_gbps"] = measured
    return info
