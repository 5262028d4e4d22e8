"""Factories of NVML traces (engines.telemetry.recorded's format) shaped like a DGX Spark's GB10.

Shapes from the field: 60-90 W of LLM inference on a 240 W box, SM clocks of 2,457-2,496 MHz
under load against 3,003 MHz maximum, unified memory (NVML's memory figures are N/A), and a
hot box that throttles (thermal slowdown, clocks well down).
"""

from __future__ import annotations

from typing import Any

HW_THERMAL, SW_POWER_CAP = 0x40, 0x04


def gb10_reading(
    power_w: float, sm_clock: int, temperature: int, util: int, reasons: int = 0
) -> dict[str, Any]:
    """One GPU's raw NVML answers; None where GB10 says "not supported"."""
    return {
        "power_mw": round(power_w * 1000),
        "sm_clock": sm_clock,
        "mem_clock": None,
        "temperature": temperature,
        "util": util,
        "memory_used": None,
        "reasons": reasons,
    }


def gb10_trace(
    seconds: float = 30.0,
    rate_hz: float = 10.0,
    idle_s: float = 1.0,
    idle_w: float = 18.0,
    load_w: float = 80.0,
    throttle: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Idle for `idle_s`, then under load; thermal throttling (clock down to 1,900 MHz) over `throttle`."""
    readings = []
    for i in range(int(seconds * rate_hz) + 1):
        t = round(i / rate_hz, 3)
        if t < idle_s:
            gpu = gb10_reading(idle_w, 850, 45, 0)
        elif throttle and throttle[0] <= t < throttle[1]:
            gpu = gb10_reading(load_w * 0.8, 1900, 91, 98, HW_THERMAL)
        else:
            gpu = gb10_reading(load_w, 2470, 70, 97)
        readings.append({"t": t, "gpus": [gpu]})
    return {"gpus": [{"name": "NVIDIA GB10", "sm_clock_max_mhz": 3003}], "readings": readings}
