"""The run page's Telemetry table (templates/runs/_telemetry.html): summary["telemetry"] as rows.

Each row is (label, text); a figure is written the one way spreads are (spread_text), and
what the machine cannot read says so ("no GPU telemetry on this machine", the energy note).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from runs.core.scoring.figures import spread_text

register = template.Library()

DASH = "—"
GB = 1e-9
# (summary["telemetry"]["during"] key, label, unit, digits, scale)
DURING = (
    ("power_w", "GPU power", "W", 1, 1.0),
    ("sm_clock_mhz", "SM clock", "MHz", 0, 1.0),
    ("temperature_c", "GPU temperature", "°C", 0, 1.0),
    ("gpu_util_pct", "GPU utilisation", "%", 0, 1.0),
    ("cpu_load", "CPU load", "%", 0, 100.0),
    ("mem_used_bytes", "host memory used", "GB", 1, GB),
)
REASONS = {"thermal": "thermal", "power_cap": "power cap", "hw_slowdown": "hardware slowdown"}
Rows = list[tuple[str, str]]


@register.simple_tag
def telemetry_rows(telemetry: Mapping[str, Any] | None) -> Rows:
    """The Telemetry table's rows; [] when the run has no telemetry summary (yet)."""
    if not telemetry:
        return []
    rows: Rows = [("sources", _sources(telemetry))]
    if not telemetry.get("gpu"):
        rows.append(("GPU", telemetry.get("note") or "no GPU telemetry on this machine"))
    rows.append(("baseline", _baseline(telemetry.get("baseline") or {})))
    during = telemetry.get("during") or {}
    for key, label, unit, digits, scale in DURING:
        if during.get(key):
            rows.append((f"{label} during the job", spread_text(during[key], unit, digits, scale)))
    peak = telemetry.get("peak_mem_used_bytes")
    rows.append(("peak host memory", f"{peak * GB:.1f} GB" if peak is not None else DASH))
    rows.append(("throttle", throttle_text(telemetry.get("throttle"))))
    return rows + energy_rows(telemetry)


def _sources(telemetry: Mapping[str, Any]) -> str:
    sources = " + ".join(telemetry.get("sources") or []) or DASH
    rate, readings = telemetry.get("rate_hz"), telemetry.get("readings")
    text = f"{sources} at {rate:g} Hz" if rate else sources
    text += f", {readings} readings" if readings is not None else ""
    memory = telemetry.get("memory_source")
    return f"{text}; memory from {memory}" if memory else text


def _baseline(baseline: Mapping[str, Any]) -> str:
    if not baseline:
        return DASH
    parts = [f"{baseline.get('s', 0):g} s idle, {baseline.get('readings', 0)} readings"]
    if baseline.get("cpu_load") is not None:
        parts.append(f"CPU load {100 * baseline['cpu_load']:.0f} %")
    for key, label in (("power_w", "GPU power"), ("cpu_power_w", "CPU power")):
        if baseline.get(key) is not None:
            parts.append(f"{label} {baseline[key]:.1f} W")
    return ", ".join(parts)


def throttle_text(throttle: Mapping[str, Any] | None) -> str:
    """"not throttled", or how long and why: "throttled 12.3 s of 60.0 s: thermal 10.1 s, ..."."""
    if not throttle:
        return DASH
    if not throttle.get("throttled"):
        return f"not throttled ({throttle.get('job_s', 0):.1f} s job)"
    floor = throttle.get("clock_floor_mhz")
    below = f"SM clock under {floor:,} MHz" if floor else "SM clock below its floor"
    reasons = [
        f"{REASONS.get(reason, below if reason == 'clock_below' else reason)} {seconds:.1f} s"
        for reason, seconds in (throttle.get("reasons_s") or {}).items()
        if seconds
    ]
    text = f"throttled {throttle.get('throttled_s', 0):.1f} s of {throttle.get('job_s', 0):.1f} s"
    return f"{text}: {', '.join(reasons)}" if reasons else text


def energy_rows(telemetry: Mapping[str, Any]) -> Rows:
    """Energy per output token and per request, overall, by output type and by concurrency."""
    energy = telemetry.get("energy")
    if not energy:
        return [("energy", telemetry.get("energy_note") or "no power reading on this machine")]
    source = f"{energy.get('power_source', DASH)} power above a {energy.get('baseline_w', 0):.1f} W baseline"
    rows: Rows = [("energy", f"{_joules(energy)} ({source})")]
    for group, label in (("by_output_type", "output type"), ("by_concurrency", "concurrency")):
        for name, figures in (energy.get(group) or {}).items():
            rows.append((f"… {label} {name}", _joules(figures)))
    return rows


def _joules(figures: Mapping[str, Any]) -> str:
    def part(key: str, unit: str) -> str:
        return f"{figures[key]:.2f} {unit}" if figures.get(key) is not None else f"{DASH} {unit}"

    counts = f"{figures.get('tokens', 0)} tokens, {figures.get('requests', 0)} requests"
    return f"{part('j_per_token', 'J per output token')}, {part('j_per_request', 'J per request')} ({counts})"
