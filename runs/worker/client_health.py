"""Each run's client health (measure.client_health) watched around its job, and the client-bound warning.

The watch runs on the job's own event loop for the job's duration; its figures go into the run's
summary as ``client_health`` (RunSummary keeps keys it does not type), and a run of an engine
whose loop was starved gets the "client-bound" warning naming what passed its threshold.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from measure.client_health import THRESHOLDS, ClientHealth, short_level
from measure.words import gettext_noop
from runs.core.worded import warning, worded


async def with_client_health(
    job: Awaitable[dict[str, Any]], health: ClientHealth | None = None
) -> dict[str, Any]:
    """The job's summary with the client health of the loop it ran on under ``client_health``."""
    async with health or ClientHealth() as watched:
        summary = await job
    summary["client_health"] = watched.figures()
    return summary


def client_bound_warning(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The client-bound warning when the run's client health says so; none otherwise."""
    health = summary.get("client_health") or {}
    if not health.get("client_bound"):
        return []
    found = [_reason(name, health) for name in health.get("reasons", [])]
    return [warning("client-bound", CLIENT_BOUND, reasons=found)]


def _reason(name: str, health: dict[str, Any]) -> dict[str, Any]:
    return worded(REASONS[name], **_REASON_FIGURES[name](health))


def _concurrency_figures(health: dict[str, Any]) -> dict[str, Any]:
    level = short_level(health) or {"achieved": 0.0, "requested": 0}
    return {"achieved": f"{level['achieved']:.1f}", "requested": level["requested"],
            "limit": f"{100 * THRESHOLDS.achieved_concurrency_share:g}"}


# Each reason's figures, as measure.client_health.verdict names them: its value and its threshold.
_REASON_FIGURES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "loop_lag": lambda h: {"value": f"{h['loop_lag_ms']['p99']:.0f}",
                           "limit": f"{THRESHOLDS.loop_lag_p99_ms:g}"},
    "cpu": lambda h: {"value": f"{h['loop_cpu_pct_of_core']:.0f}",
                      "limit": f"{THRESHOLDS.loop_cpu_pct_of_core:g}"},
    "thinned": lambda h: {"value": h["live_updates_thinned"]},
    "schedule_delay": lambda h: {"value": f"{h['schedule_delay_ms']['p99']:.0f}",
                                 "limit": f"{THRESHOLDS.schedule_delay_p99_ms:g}"},
    "achieved_concurrency": _concurrency_figures,
}


CLIENT_BOUND = gettext_noop("these figures may be the tool's, not the engine's: %(reasons)s")
REASONS = {
    "loop_lag": gettext_noop("the measuring loop woke %(value)s ms late at p99, above %(limit)s ms"),
    "cpu": gettext_noop("the measuring loop used %(value)s %% of a core, above %(limit)s %%"),
    "thinned": gettext_noop("%(value)s live updates thinned"),
    "schedule_delay": gettext_noop("requests started %(value)s ms late at p99, above %(limit)s ms"),
    "achieved_concurrency": gettext_noop(
        "the client kept %(achieved)s of %(requested)s requests in flight, under %(limit)s %%"),
}
