"""A run's telemetry summary: baseline, figures during the job, throttling, and energy.

Throttling (docs/metrics.md "Throttling"): a job-phase reading counts as throttled while NVML
names a thermal, power-cap or hardware-slowdown reason, or while the GPU is busy (utilisation
>= BUSY_UTIL_PCT) with its SM clock under the floor (a share of its maximum clock). Idle clocks
are low by design, so a low clock on an idle GPU is not throttling. Each reading holds until
the next one, at most MAX_HOLD readings' time (a gap in readings is not counted as anything).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from measure.stats import summarize
from measure.words import gettext_noop
from runs.core.energy import Window, baseline_power, energy_summary
from runs.core.worded import say, worded

__all__ = ["BUSY_UTIL_PCT", "NO_POWER_NOTE", "summarize_telemetry", "throttle_summary", "throttled_message"]

BUSY_UTIL_PCT = 50
MAX_HOLD = 3
NO_POWER_NOTE = gettext_noop("no power reading on this machine (no GPU telemetry, no readable RAPL counter)")
NO_BASELINE_NOTE = gettext_noop("no idle baseline was taken, so no energy figure")
NO_WINDOW_NOTE = gettext_noop("no request with a start and an end to attribute energy to")
REASONS = ("thermal", "power_cap", "hw_slowdown", "clock_below")
DURING = ("power_w", "sm_clock_mhz", "temperature_c", "gpu_util_pct", "cpu_load", "mem_used_bytes")


def _held(readings: Sequence[Mapping[str, Any]], interval_s: float) -> list[tuple[Mapping[str, Any], float]]:
    """Each reading with how long it held (until the next, capped; the last: one interval)."""
    cap = MAX_HOLD * interval_s
    return [
        (r, min(readings[i + 1]["t"] - r["t"], cap) if i + 1 < len(readings) else interval_s)
        for i, r in enumerate(readings)
    ]


def throttle_summary(
    job: Sequence[Mapping[str, Any]], interval_s: float, floor_mhz: float | None
) -> dict[str, Any]:
    """Seconds of the job under each throttle reason and in all (a second under two reasons counts once)."""
    seconds = dict.fromkeys(REASONS, 0.0)
    throttled = job_s = 0.0
    for reading, held in _held(job, interval_s):
        job_s += held
        reasons = set(reading.get("throttle") or ()) & set(REASONS)
        clock, util = reading.get("sm_clock_mhz"), reading.get("gpu_util_pct") or 0
        if floor_mhz is not None and clock is not None and clock < floor_mhz and util >= BUSY_UTIL_PCT:
            reasons.add("clock_below")
        for reason in reasons:
            seconds[reason] += held
        throttled += held if reasons else 0.0
    return {
        "throttled": throttled > 0,
        "throttled_s": round(throttled, 3),
        "job_s": round(job_s, 3),
        "reasons_s": {k: round(v, 3) for k, v in seconds.items()},
        "clock_floor_mhz": floor_mhz,
    }


def throttled_message(throttle: Mapping[str, Any]) -> str:
    """The run's `throttled` warning: how long, and under which reasons."""
    return say(*throttled_words(throttle))


def throttled_words(throttle: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The `throttled` warning's template and figures (runs/core/worded.py)."""
    names = {
        "thermal": gettext_noop("thermal %(s)s s"),
        "power_cap": gettext_noop("power cap %(s)s s"),
        "hw_slowdown": gettext_noop("hardware slowdown %(s)s s"),
        "clock_below": gettext_noop("SM clock under %(mhz)s MHz while busy %(s)s s"),
    }
    mhz = f"{throttle.get('clock_floor_mhz') or 0:,.0f}"
    reasons = [worded(names[k], s=f"{v:.1f}", mhz=mhz) for k, v in throttle["reasons_s"].items() if v > 0]
    text = gettext_noop("throttled for %(throttled_s)s s of the %(job_s)s s job: %(reasons)s")
    return text, {"throttled_s": f"{throttle['throttled_s']:.1f}", "job_s": f"{throttle['job_s']:.1f}",
                  "reasons": reasons}


def summarize_telemetry(
    readings: Sequence[Mapping[str, Any]], info: Mapping[str, Any], windows: Sequence[Window]
) -> dict[str, Any]:
    """The run's summary["telemetry"] from every reading (all phases) and its requests' windows.

    :param info: what the sampler knew: gpu, note, sources, rate_hz, unified_memory, clock_floor_mhz
    """
    job = [r for r in readings if r.get("phase") == "job"]
    base = [r for r in readings if r.get("phase") == "baseline"]
    interval_s = 1 / info["rate_hz"]
    summary: dict[str, Any] = {
        "gpu": info["gpu"],
        "note": info.get("note"),
        "sources": list(info["sources"]),
        "rate_hz": info["rate_hz"],
        "readings": len(readings),
        "memory_source": "nvml" if info["gpu"] and not info.get("unified_memory") else "meminfo",
        "baseline": _baseline(base, interval_s),
        "during": {key: summarize(r.get(key) for r in job) for key in DURING},
        "peak_mem_used_bytes": max(
            (r["mem_used_bytes"] for r in readings if "mem_used_bytes" in r), default=None
        ),
        "throttle": throttle_summary(job, interval_s, info.get("clock_floor_mhz")),
    }
    summary["energy"], summary["energy_note"] = _energy(readings, windows)
    return summary


def _baseline(base: Sequence[Mapping[str, Any]], interval_s: float) -> dict[str, Any]:
    cpu = summarize(r.get("cpu_load") for r in base)
    return {
        "s": round(len(base) * interval_s, 3),
        "readings": len(base),
        "power_w": baseline_power(base, "power_w"),
        "cpu_power_w": baseline_power(base, "cpu_power_w"),
        "cpu_load": cpu["median"] if cpu else None,
    }


def _energy(
    readings: Sequence[Mapping[str, Any]], windows: Sequence[Window]
) -> tuple[dict[str, Any] | None, str | None]:
    for key, source in (("power_w", "gpu"), ("cpu_power_w", "cpu (RAPL)")):
        power = [(r["t"], float(r[key])) for r in readings if r.get(key) is not None]
        if not power:
            continue
        baseline = baseline_power(readings, key)
        if baseline is None:
            return None, NO_BASELINE_NOTE
        energy = energy_summary(power, baseline, windows)
        if energy is None:
            return None, NO_WINDOW_NOTE
        return {"power_source": source} | energy, None
    return None, NO_POWER_NOTE
