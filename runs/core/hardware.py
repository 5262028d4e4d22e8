"""What the results pages read of a run's hardware truth (issue 17): throttling and energy.

The sampler writes summary["telemetry"] (its "throttle" and "energy", or an "energy_note" saying
why there is no energy) and a warning with code "throttled"; docs/metrics.md describes both. Every
page, export and alert reads them through these functions, so a run without telemetry (older runs,
machines with no power reading) reads as "not throttled" and "no energy". Plain Python, no Django.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from measure.words import gettext_noop
from runs.core.readings import Summary

__all__ = ["NO_ENERGY", "energy_note", "energy_of", "throttle_text", "throttled_s"]

NO_ENERGY = gettext_noop("no energy reading for this run")


def _telemetry(summary: Summary | None) -> Mapping[str, Any]:
    telemetry = (summary or {}).get("telemetry")
    return telemetry if isinstance(telemetry, Mapping) else {}


def throttled_s(summary: Summary | None, warnings: Iterable[Mapping[str, Any]] | None = ()) -> float | None:
    """Seconds the box was throttled during the run, or None when it was not (or nobody knows)."""
    throttle = _telemetry(summary).get("throttle")
    if isinstance(throttle, Mapping) and throttle.get("throttled"):
        return float(throttle.get("throttled_s") or 0.0)
    for warning in warnings or ():
        if warning.get("kind") == "throttled":
            return float(warning.get("throttled_s") or 0.0)
    return None


def throttle_text(seconds: float) -> str:
    """The mark a throttled run gets: "throttled 12.3 s"."""
    return f"throttled {seconds:.1f} s"


def energy_of(summary: Summary | None) -> Mapping[str, Any] | None:
    """The run's energy figures (j_per_token, j_per_request, ...), or None where none were measured."""
    energy = _telemetry(summary).get("energy")
    return energy if isinstance(energy, Mapping) else None


def energy_note(summary: Summary | None) -> str:
    """Why the run has no energy figure: the sampler's note, or a generic one."""
    return str(_telemetry(summary).get("energy_note") or NO_ENERGY)
