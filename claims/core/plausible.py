"""Plausibility first: a claimed decode speed above the roofline of the hardware the claim states.

The ceiling per stream is bandwidth / bytes read per token (engines.roofline.ceiling_tps), times the
tokens per verification the claim states for that level (or, where it states none, its lookahead + 1:
the most one verification can emit). An aggregate over c streams is bounded by c times that (each step
reads the weights once for all of them). A claim above its ceiling is ``exceeds-hardware``, with the
arithmetic's inputs, whether or not anything runs. Plain Python, no Django.
"""

from __future__ import annotations

from typing import Any

from claims.core.schema import ClaimData, FigureData
from engines.roofline import GB, ceiling_tps

__all__ = ["ceiling_for", "exceeds"]


def ceiling_for(claim: ClaimData, figure: FigureData) -> dict[str, Any] | None:
    """The roofline's arithmetic for a decode figure (None: not a decode figure, or no bandwidth or bytes)."""
    if figure.metric not in ("decode_tps", "decode_tps_total"):
        return None
    if not claim.bandwidth_gbps or not claim.bytes_per_token_gb:
        return None
    per_pass, source = _per_verification(claim, figure.concurrency)
    streams = figure.concurrency if figure.metric == "decode_tps_total" else 1
    plain = ceiling_tps(claim.bandwidth_gbps, claim.bytes_per_token_gb * GB)
    ceiling = plain * per_pass * streams
    arithmetic = f"{claim.bandwidth_gbps:g} GB/s / {claim.bytes_per_token_gb:g} GB = {plain:.1f} tok/s"
    if per_pass != 1:
        arithmetic += f" x {per_pass:g} tokens per verification"
    if streams != 1:
        arithmetic += f" x {streams} streams"
    return {
        "bandwidth_gbps": claim.bandwidth_gbps,
        "bytes_per_token_gb": claim.bytes_per_token_gb,
        "tokens_per_verification": per_pass,
        "tokens_per_verification_from": source,
        "streams": streams,
        "ceiling_tps": round(ceiling, 3),
        "claimed": figure.value,
        "arithmetic": f"{arithmetic} = {ceiling:.1f} tok/s",
    }


def exceeds(claim: ClaimData, figure: FigureData) -> dict[str, Any] | None:
    """The ceiling's arithmetic when the figure claims more than it (None: within it, or no ceiling)."""
    ceiling = ceiling_for(claim, figure)
    if ceiling is None or figure.value <= ceiling["ceiling_tps"]:
        return None
    return ceiling


def _per_verification(claim: ClaimData, concurrency: int) -> tuple[float, str]:
    """Tokens one verification emits, and where that number comes from."""
    stated = [f for f in claim.figures if f.metric == "tokens_per_verification"]
    at_level = [f for f in stated if f.concurrency == concurrency] or stated
    if at_level:
        return max(f.value for f in at_level), "claimed tokens_per_verification"
    if claim.lookahead:
        return float(claim.lookahead + 1), "lookahead + 1 (the most a verification emits)"
    return 1.0, "no drafting"
