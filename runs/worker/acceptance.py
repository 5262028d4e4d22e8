"""A run's acceptance from the engine's side: its /metrics counters over the run, or (Ollama, whose
replies carry no draft counts) the `draft acceptance = ...` lines of its log. Where the engine
counted, its count is the run's pooled headline (docs/metrics.md, Acceptance)."""
from __future__ import annotations

from typing import Any

from measure import pooled
from measure.catalog import ACCEPTANCE_RATE, ACCEPTANCE_RATE_PER_REQUEST, LOG_ACCEPTANCE
from measure.stats import summarize
from runs.core.request_figures import ENGINE_COUNTERS, FROM_LOG, engine_pooled, pooled_figures

__all__ = ["log_acceptance", "with_engine_acceptance"]


def with_engine_acceptance(
    summary: dict[str, Any], events: list[dict[str, Any]], by_length: dict[str, list[dict[str, Any]]]
) -> None:
    """Add the log's acceptance (over the run and, for a sweep, per length) to `summary`, and make
    the engine's own count the headline where the job pooled acceptance over its requests."""
    summary[LOG_ACCEPTANCE] = log_acceptance(events)
    _pool_from_engine(summary)
    if by_length:
        _with_log_acceptance(summary, by_length)


def log_acceptance(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Acceptance from the engine's log lines (the only source Ollama has), over the whole run."""
    generated = sum(e["generated"] for e in events)
    if not generated:
        return None
    accepted = sum(e["accepted"] for e in events)
    return {ACCEPTANCE_RATE: pooled.acceptance(accepted, generated), "accepted": accepted,
            "generated": generated, "requests": len(events)}


def _pool_from_engine(summary: dict[str, Any]) -> None:
    """A job that pools acceptance over its requests takes the engine's own count instead where
    the engine has one: its /metrics counters over the run, else (Ollama) its log lines; the
    requests' sums stand otherwise (docs/metrics.md, Acceptance)."""
    if ACCEPTANCE_RATE not in summary:
        return
    summary |= engine_pooled(summary.get(ENGINE_COUNTERS))
    logged = summary.get(LOG_ACCEPTANCE)
    if summary[ACCEPTANCE_RATE] is None and logged:
        summary[ACCEPTANCE_RATE] = _pooled_log(logged)


def _with_log_acceptance(summary: dict[str, Any], by_length: dict[str, list[dict[str, Any]]]) -> None:
    """A sweep on an engine whose replies carry no draft counts (Ollama): each length's acceptance
    from the log lines of its requests (warm-up included), where the replies gave none."""
    by_log = {k: log_acceptance(events) for k, events in by_length.items()}
    summary["log_acceptance_by_length"] = by_log
    for length, events in by_length.items():
        figures, logged = (summary.get("lengths") or {}).get(length), by_log[length]
        if figures and figures["all"].get(ACCEPTANCE_RATE) is None and logged:
            figures["all"][ACCEPTANCE_RATE] = _pooled_log(logged)
            figures["all"][ACCEPTANCE_RATE_PER_REQUEST] = summarize(e["rate"] for e in events)


def _pooled_log(logged: dict[str, Any]) -> dict[str, Any] | None:
    """The log's accepted / generated as a pooled figure (a log line counts no verifications)."""
    figures = pooled_figures(logged["accepted"], logged["generated"], None, FROM_LOG, logged["requests"])
    return figures[ACCEPTANCE_RATE]
