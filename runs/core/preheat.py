"""Pre-heating: generating before the measured job until the GPU's clocks and temperature settle.

A cold box runs faster for its first minutes, then throttles; a run that starts cold and one
that starts hot differ by more than many config changes. Settled (docs/metrics.md) means: over
the last `settle_s` seconds of readings, the temperature moved at most SETTLE_C degrees and the
SM clock at most SETTLE_CLOCK_SHARE of its median.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engines.clients import EngineClient, GenerationRequest
from runs.core.request_figures import send

__all__ = ["SETTLE_C", "SETTLE_CLOCK_SHARE", "preheat", "settled"]

SETTLE_C = 1.0
SETTLE_CLOCK_SHARE = 0.02
NO_READINGS = "no GPU temperature or clock readings to settle on: pre-heated for the whole time given"


def settled(readings: Sequence[Mapping[str, Any]], settle_s: float) -> bool | None:
    """Whether the last `settle_s` seconds of readings are steady; None without GPU readings."""
    if not readings or not any("temperature_c" in r or "sm_clock_mhz" in r for r in readings):
        return None
    end = readings[-1]["t"]
    if end - readings[0]["t"] < settle_s:
        return False  # not watched for long enough yet
    recent = [r for r in readings if r["t"] >= end - settle_s]
    temps = [r["temperature_c"] for r in recent if "temperature_c" in r]
    clocks = sorted(r["sm_clock_mhz"] for r in recent if "sm_clock_mhz" in r)
    steady_temp = not temps or max(temps) - min(temps) <= SETTLE_C
    steady_clock = not clocks or clocks[-1] - clocks[0] <= SETTLE_CLOCK_SHARE * clocks[len(clocks) // 2]
    return steady_temp and steady_clock


async def preheat(
    client: EngineClient,
    request: GenerationRequest,
    readings: Callable[[], Sequence[Mapping[str, Any]]],
    max_s: float,
    settle_s: float = 10.0,
) -> dict[str, Any]:
    """Send `request` again and again until the readings since the start settle, or `max_s` passes.

    :param readings: the telemetry readings taken since pre-heating began (grows as it runs)
    """
    started, sent, verdict = time.monotonic(), 0, None
    while time.monotonic() - started < max_s:
        await send(client, request, f"pre-heat request {sent + 1}")
        sent += 1
        verdict = settled(readings(), settle_s)
        if verdict:
            break
    last = (readings() or [{}])[-1]
    return {
        "s": round(time.monotonic() - started, 3),
        "requests": sent,
        "settled": verdict,
        "temperature_c": last.get("temperature_c"),
        "sm_clock_mhz": last.get("sm_clock_mhz"),
        "note": NO_READINGS if verdict is None else None,
    }
