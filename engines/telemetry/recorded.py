"""NVML readings recorded as a trace, and played back with the pynvml calls NvmlSource makes.

A trace is plain JSON: {"gpus": [{"name", "sm_clock_max_mhz"}], "readings": [{"t", "gpus":
[{"power_mw", "sm_clock", "mem_clock", "temperature", "util", "memory_used", "reasons"}]}]}.
None stands for NVML's "not supported" (GB10's memory figures). `record_trace` writes one from a
real GPU; `RecordedNvml` answers from one, the reading in effect at its clock's time, so the
sampler's GPU paths (throttling, energy, unified memory) run on machines without a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

__all__ = ["NotSupported", "RecordedNvml", "record_trace"]


class NotSupported(Exception):
    """What NVML raises for a figure the device does not have (NVML_ERROR_NOT_SUPPORTED)."""


class RecordedNvml:
    """The subset of pynvml that engines.telemetry.nvml calls, answering from a trace.

    :param clock: seconds since the trace's start; by default the wall clock since construction
    """

    def __init__(self, trace: dict[str, Any], clock: Callable[[], float] | None = None) -> None:
        self.trace = trace
        started = time.monotonic()
        self.clock = clock or (lambda: time.monotonic() - started)
        self.calls = 0

    def _now(self, handle: int) -> dict[str, Any]:
        self.calls += 1
        now, current = self.clock(), self.trace["readings"][0]
        for reading in self.trace["readings"]:
            if reading["t"] > now:
                break
            current = reading
        return current["gpus"][handle]

    def _field(self, handle: int, name: str) -> Any:
        value = self._now(handle).get(name)
        if value is None:
            raise NotSupported(f"{name}: Not Supported")
        return value

    def nvmlInit(self) -> None:
        """Nothing to load."""

    def nvmlShutdown(self) -> None:
        """Nothing to release."""

    def nvmlDeviceGetCount(self) -> int:
        return len(self.trace["gpus"])

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return str(self.trace["gpus"][handle]["name"])

    def nvmlDeviceGetMaxClockInfo(self, handle: int, clock_type: int) -> int:
        value = self.trace["gpus"][handle].get("sm_clock_max_mhz") if clock_type == 1 else None
        if value is None:
            raise NotSupported("max clock: Not Supported")
        return int(value)

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return int(self._field(handle, "power_mw"))

    def nvmlDeviceGetClockInfo(self, handle: int, clock_type: int) -> int:
        return int(self._field(handle, "sm_clock" if clock_type == 1 else "mem_clock"))

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        return int(self._field(handle, "temperature"))

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=self._field(handle, "util"), memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(used=self._field(handle, "memory_used"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        return int(self._now(handle).get("reasons") or 0)


def record_trace(nvml: Any, seconds: float, rate_hz: float = 10.0) -> dict[str, Any]:
    """Read every GPU through `nvml` (pynvml) for `seconds` into a trace RecordedNvml plays back."""
    from engines.telemetry.nvml import open_nvml

    source, why = open_nvml(nvml)
    if source is None:
        raise RuntimeError(why)
    trace: dict[str, Any] = {
        "gpus": [{"name": g["name"], "sm_clock_max_mhz": g["sm_clock_max_mhz"]} for g in source.gpus],
        "readings": [],
    }
    started = time.monotonic()
    while (t := time.monotonic() - started) < seconds:
        gpus = source.read(t)["gpus"]
        trace["readings"].append({"t": round(t, 3), "gpus": [_raw(g) for g in gpus]})
        time.sleep(1 / rate_hz)
    source.close()
    return trace


def _raw(gpu: dict[str, Any]) -> dict[str, Any]:
    power = gpu.get("power_w")
    return {
        "power_mw": round(power * 1000) if power is not None else None,
        "sm_clock": gpu.get("sm_clock_mhz"),
        "mem_clock": gpu.get("mem_clock_mhz"),
        "temperature": gpu.get("temperature_c"),
        "util": gpu.get("gpu_util_pct"),
        "memory_used": gpu.get("gpu_mem_used_bytes"),
        "reasons": gpu.get("throttle_mask", 0),
    }
