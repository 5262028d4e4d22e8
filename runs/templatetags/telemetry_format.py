"""The run page's Telemetry table (templates/runs/_telemetry.html): summary["telemetry"] as rows.

Each row is (label, text); a figure is written the one way spreads are (spread_text), and
what the machine cannot read says so ("no GPU telemetry on this machine", the energy note).
Labels and texts are in the reader's language; the notes the sampler stored (English) are
translated where they are shown.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from runs.core.scoring.figures import spread_text

register = template.Library()

DASH = "—"
GB = 1e-9
# (summary["telemetry"]["during"] key, label, unit, digits, scale)
DURING = (
    ("power_w", _("GPU power during the job"), "W", 1, 1.0),
    ("sm_clock_mhz", _("SM clock during the job"), "MHz", 0, 1.0),
    ("temperature_c", _("GPU temperature during the job"), "°C", 0, 1.0),
    ("gpu_util_pct", _("GPU utilisation during the job"), "%", 0, 1.0),
    ("cpu_load", _("CPU load during the job"), "%", 0, 100.0),
    ("mem_used_bytes", _("host memory used during the job"), "GB", 1, GB),
)
REASONS = {"thermal": _("thermal"), "power_cap": _("power cap"), "hw_slowdown": _("hardware slowdown")}
Rows = list[tuple[str, str]]


@register.simple_tag
def telemetry_rows(telemetry: Mapping[str, Any] | None) -> Rows:
    """The Telemetry table's rows; [] when the run has no telemetry summary (yet)."""
    if not telemetry:
        return []
    rows: Rows = [(gettext("sources"), _sources(telemetry))]
    if not telemetry.get("gpu"):
        note = telemetry.get("note")
        rows.append(("GPU", gettext(note) if note else gettext("no GPU telemetry on this machine")))
    rows.append((gettext("baseline"), _baseline(telemetry.get("baseline") or {})))
    during = telemetry.get("during") or {}
    for key, label, unit, digits, scale in DURING:
        if during.get(key):
            rows.append((str(label), spread_text(during[key], unit, digits, scale)))
    peak = telemetry.get("peak_mem_used_bytes")
    rows.append((gettext("peak host memory"), f"{peak * GB:.1f} GB" if peak is not None else DASH))
    rows.append((gettext("throttle"), throttle_text(telemetry.get("throttle"))))
    return rows + energy_rows(telemetry)


def _sources(telemetry: Mapping[str, Any]) -> str:
    sources = " + ".join(telemetry.get("sources") or []) or DASH
    rate, readings = telemetry.get("rate_hz"), telemetry.get("readings")
    at_rate = gettext("%(sources)s at %(rate)s Hz")
    text = at_rate % {"sources": sources, "rate": f"{rate:g}"} if rate else sources
    text += gettext(", %(n)s readings") % {"n": readings} if readings is not None else ""
    memory = telemetry.get("memory_source")
    return gettext("%(text)s; memory from %(memory)s") % {"text": text, "memory": memory} if memory else text


def _baseline(baseline: Mapping[str, Any]) -> str:
    if not baseline:
        return DASH
    idle = gettext("%(s)s s idle, %(n)s readings")
    parts = [idle % {"s": f"{baseline.get('s', 0):g}", "n": baseline.get("readings", 0)}]
    if baseline.get("cpu_load") is not None:
        parts.append(gettext("CPU load %(pct)s %%") % {"pct": f"{100 * baseline['cpu_load']:.0f}"})
    for key, label in (("power_w", _("GPU power")), ("cpu_power_w", _("CPU power"))):
        if baseline.get(key) is not None:
            parts.append(f"{label} {baseline[key]:.1f} W")
    return ", ".join(parts)


def throttle_text(throttle: Mapping[str, Any] | None) -> str:
    """"not throttled", or how long and why: "throttled 12.3 s of 60.0 s: thermal 10.1 s, ..."."""
    if not throttle:
        return DASH
    if not throttle.get("throttled"):
        return gettext("not throttled (%(s)s s job)") % {"s": f"{throttle.get('job_s', 0):.1f}"}
    floor = throttle.get("clock_floor_mhz")
    below = (gettext("SM clock under %(mhz)s MHz") % {"mhz": f"{floor:,}"} if floor
             else gettext("SM clock below its floor"))
    reasons = [
        f"{REASONS.get(reason, below if reason == 'clock_below' else reason)} {seconds:.1f} s"
        for reason, seconds in (throttle.get("reasons_s") or {}).items()
        if seconds
    ]
    spans = {"s": f"{throttle.get('throttled_s', 0):.1f}", "job": f"{throttle.get('job_s', 0):.1f}"}
    text = gettext("throttled %(s)s s of %(job)s s") % spans
    return f"{text}: {', '.join(reasons)}" if reasons else text


def energy_rows(telemetry: Mapping[str, Any]) -> Rows:
    """Energy per output token and per request, overall, by output type and by concurrency."""
    energy = telemetry.get("energy")
    if not energy:
        note = telemetry.get("energy_note")
        return [(gettext("energy"), gettext(note) if note else gettext("no power reading on this machine"))]
    source = gettext("%(source)s power above a %(w)s W baseline") % {
        "source": energy.get("power_source", DASH), "w": f"{energy.get('baseline_w', 0):.1f}"}
    rows: Rows = [(gettext("energy"), f"{_joules(energy)} ({source})")]
    groups = (("by_output_type", _("… output type %(name)s")),
              ("by_concurrency", _("… concurrency %(name)s")))
    for group, label in groups:
        for name, figures in (energy.get(group) or {}).items():
            rows.append((str(label) % {"name": name}, _joules(figures)))
    return rows


def _joules(figures: Mapping[str, Any]) -> str:
    def part(key: str, unit: str) -> str:
        return f"{figures[key]:.2f} {unit}" if figures.get(key) is not None else f"{DASH} {unit}"

    counts = gettext("%(tokens)s tokens, %(requests)s requests") % {
        "tokens": figures.get("tokens", 0), "requests": figures.get("requests", 0)}
    per_token = part("j_per_token", gettext("J per output token"))
    per_request = part("j_per_request", gettext("J per request"))
    return f"{per_token}, {per_request} ({counts})"
