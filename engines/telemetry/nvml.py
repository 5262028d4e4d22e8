"""GPU telemetry through NVML (the nvidia-ml-py package, imported as `pynvml`).

Every NVML call can answer "not supported": GB10's unified memory has no memory figures, some
boards have no memory clock, a few no power reading. Such a field is left out of the reading
rather than read as zero. The `nvml` object is the pynvml module in production and a recorded
trace (engines.telemetry.recorded) in tests, so every GPU path runs without a GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["THROTTLE_BITS", "NvmlSource", "open_nvml", "throttle_reasons"]

# NVML's clocks-event (throttle) reason bits, grouped as users name them.
THROTTLE_BITS = {
    "thermal": 0x20 | 0x40,  # software and hardware thermal slowdown
    "power_cap": 0x04 | 0x80,  # software power cap, hardware power brake
    "hw_slowdown": 0x08,
}
NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0


def throttle_reasons(mask: int) -> list[str]:
    """The active throttle reasons of an NVML clocks-event mask, in THROTTLE_BITS order."""
    return [name for name, bits in THROTTLE_BITS.items() if mask & bits]


def open_nvml(nvml: Any = None) -> tuple[NvmlSource | None, str | None]:
    """An NVML source over every GPU, or None and why not (no driver, no GPU)."""
    if nvml is None:
        import pynvml

        nvml = pynvml
    try:
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
    except Exception as exc:  # pynvml raises NVMLError subclasses made at import time
        return None, f"NVML not available: {exc}"
    if not count:
        nvml.nvmlShutdown()
        return None, "NVML found no GPU"
    return NvmlSource(nvml, [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]), None


class NvmlSource:
    """Power, SM and memory clocks, temperature, utilisation, memory used and throttle reasons per GPU."""

    name = "nvml"

    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self.nvml = nvml
        self.handles = handles
        self.gpus = [self._describe(i, h) for i, h in enumerate(handles)]
        self.unified_memory = all(self._try(nvml.nvmlDeviceGetMemoryInfo, h) is None for h in handles)

    def _describe(self, index: int, handle: Any) -> dict[str, Any]:
        name = self._try(self.nvml.nvmlDeviceGetName, handle)
        max_sm = self._try(self.nvml.nvmlDeviceGetMaxClockInfo, handle, NVML_CLOCK_SM)
        return {
            "index": index,
            "name": name.decode() if isinstance(name, bytes) else name,
            "sm_clock_max_mhz": max_sm,
        }

    def read(self, t: float) -> dict[str, Any]:
        """One reading: the per-GPU list and the machine-wide figures (sum of power, min of clocks,
        max of temperature and utilisation, the union of throttle reasons)."""
        gpus = [self._read_gpu(i, h) for i, h in enumerate(self.handles)]
        reading: dict[str, Any] = {"gpus": gpus, "throttle": sorted({r for g in gpus for r in g["throttle"]})}
        for field, combine in (
            ("power_w", sum),
            ("sm_clock_mhz", min),
            ("mem_clock_mhz", min),
            ("temperature_c", max),
            ("gpu_util_pct", max),
            ("gpu_mem_used_bytes", sum),
        ):
            values = [g[field] for g in gpus if field in g]
            if values:
                reading[field] = round(combine(values), 2)
        return reading

    def _read_gpu(self, index: int, h: Any) -> dict[str, Any]:
        nvml, get = self.nvml, self._try
        power_mw = get(nvml.nvmlDeviceGetPowerUsage, h)
        util = get(nvml.nvmlDeviceGetUtilizationRates, h)
        memory = get(nvml.nvmlDeviceGetMemoryInfo, h)
        mask = get(nvml.nvmlDeviceGetCurrentClocksEventReasons, h)
        values = {
            "power_w": power_mw / 1000 if power_mw is not None else None,
            "sm_clock_mhz": get(nvml.nvmlDeviceGetClockInfo, h, NVML_CLOCK_SM),
            "mem_clock_mhz": get(nvml.nvmlDeviceGetClockInfo, h, NVML_CLOCK_MEM),
            "temperature_c": get(nvml.nvmlDeviceGetTemperature, h, NVML_TEMPERATURE_GPU),
            "gpu_util_pct": util.gpu if util is not None else None,
            "gpu_mem_used_bytes": memory.used if memory is not None else None,
        }
        gpu = {"index": index} | {k: v for k, v in values.items() if v is not None}
        gpu["throttle"] = throttle_reasons(mask or 0)
        gpu["throttle_mask"] = mask or 0  # NVML's own bits, for a recorded trace
        return gpu

    @staticmethod
    def _try(call: Callable[..., Any], *args: Any) -> Any:
        """The call's answer, or None where NVML says the figure is not there (N/A, not supported)."""
        try:
            return call(*args)
        except Exception as exc:  # every NVMLError; a broken field must not stop the others
            log.debug("NVML %s: %s", getattr(call, "__name__", call), exc)
            return None

    def close(self) -> None:
        """Release NVML."""
        self._try(self.nvml.nvmlShutdown)
