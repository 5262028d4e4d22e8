"""Template helpers that show run figures the one way docs/metrics.md defines them.

A summary figure is a median with its spread, "median [min-max] unit (n=N)" (an en dash
in the page), and below it the median's 95 % interval and the p90 and p99, with "= max" where
too few requests were measured for the percentile (figures.interval_text).
The same table of metrics is handed to the run page's scripts as JSON
(static/js/jobs/speed.js, through static/js/format.js), so live updates format figures identically.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypedDict, cast

from django import template
from django.utils.html import format_html

from runs.core import registry
from runs.core.scoring.figures import Spread, figure_text, interval_text, spread_text, value_text

register = template.Library()

EN_DASH = "\u2013"
NOT_EXPOSED = "not exposed by this engine"
NOT_YET = "no data yet"
# SGLang's and Ollama's figures have no per-position counts (docs/metrics.md, Per-position acceptance).
NO_POSITIONS = "not exposed by this engine (Ollama), or no drafting"


class SummaryColumn(TypedDict):
    key: str
    label: str
    unit: str
    scale: float
    digits: int


SUMMARY_METRICS: list[SummaryColumn] = [
    {"key": "ttft_s", "label": "TTFT", "unit": "s", "scale": 1, "digits": 3},
    {"key": "ttft_engine_s", "label": "TTFT (engine)", "unit": "s", "scale": 1, "digits": 3},
    {"key": "decode_tps_client", "label": "decode (client)", "unit": "tok/s", "scale": 1, "digits": 1},
    {"key": "decode_tps_engine", "label": "decode (engine)", "unit": "tok/s", "scale": 1, "digits": 1},
    {"key": "prefill_tps", "label": "prefill", "unit": "tok/s", "scale": 1, "digits": 0},
    {"key": "e2e_s", "label": "E2E", "unit": "s", "scale": 1, "digits": 2},
    # Stored as a 0..1 fraction, shown as a percentage.
    {"key": "acceptance_rate", "label": "acceptance rate", "unit": "%", "scale": 100, "digits": 1},
    {"key": "tokens_per_verification", "label": "tokens per verification", "unit": "tokens",
     "scale": 1, "digits": 2},
]
# Shown only for a run whose requests reasoned ("thinking"): see has_reasoning.
REASONING_METRICS: list[SummaryColumn] = [
    {"key": "ttfr_s", "label": "TTFR (first reasoning token)", "unit": "s", "scale": 1, "digits": 3},
    {"key": "ttfo_s", "label": "TTFO (first answer token)", "unit": "s", "scale": 1, "digits": 3},
    {"key": "reasoning_tokens", "label": "reasoning tokens", "unit": "tokens", "scale": 1, "digits": 0},
    {"key": "answer_tokens", "label": "answer tokens", "unit": "tokens", "scale": 1, "digits": 0},
    {"key": "decode_tps_answer", "label": "decode (answer tokens)", "unit": "tok/s", "scale": 1, "digits": 1},
]
REASONING_KEYS = frozenset(m["key"] for m in REASONING_METRICS)
METRICS_BY_KEY = {m["key"]: m for m in SUMMARY_METRICS + REASONING_METRICS}


def has_reasoning(summary: dict[str, Any] | None) -> bool:
    """Whether a run's requests reasoned: a first reasoning token was timed, or reasoning counted."""
    summary = summary or {}
    counted = summary.get("reasoning_tokens") or {}
    return bool(summary.get("ttfr_s")) or bool(counted.get("max"))


def format_spread(stats: dict[str, Any], metric: SummaryColumn) -> str:
    """Format one {median, min, max, n} entry, e.g. 41.2 [39.8-43.0] tok/s (n=9)."""
    return spread_text(stats, metric["unit"], metric["digits"], metric["scale"])


@register.simple_tag
def summary_figure(summary: dict[str, Any] | None, key: str, hover: bool = False) -> str:
    """One summary figure as HTML; "—" with a reason when there is none.

    Its interval and percentiles follow on a small line, or with `hover` (the run list) in the
    figure's title.
    """
    summary = summary or {}
    stats = summary.get(key)
    if not stats:
        return _missing(NOT_EXPOSED if key in summary else NOT_YET)
    metric = METRICS_BY_KEY[key]
    text = format_spread(stats, metric)
    more = interval_text(stats, metric["unit"], metric["digits"], metric["scale"])
    if not more:  # a summary stored before intervals were
        return format_html("<span>{}</span>", text)
    if hover:
        return format_html('<span title="{}">{}</span>', more, text)
    return format_html('<span><span>{}</span><br><small class="interval">{}</small></span>', text, more)


@register.simple_tag
def headline_figure(run: Any) -> str:
    """The run's job's headline (its registry entry's): "decode (client) 41.2 tok/s", or "—" without one."""
    spec = registry.JOBS.get(run.job)
    if spec is None:
        return _missing(NOT_YET)
    metric, summary = spec.headline, run.summary or {}
    spread = summary.get(metric.key)
    if isinstance(spread, dict) and "median" in spread:  # a spread over requests: shown whole
        return format_html("{} <span>{}</span>", metric.label, figure_text(metric, cast(Spread, spread)))
    value = metric.value(summary) if summary else None
    if value is None or isinstance(value, bool):
        return format_html("{} {}", metric.label, _missing(NOT_YET if not run.finished else NOT_EXPOSED))
    return format_html("{} <span>{}</span>", metric.label, value_text(metric, value))


def positions_text(fractions: Sequence[float]) -> str:
    """Acceptance by draft position as "position 1: 90.0 %, 2: 75.0 %" (format.js positions())."""
    return "position " + ", ".join(f"{i}: {100 * f:.1f} %" for i, f in enumerate(fractions, 1))


@register.simple_tag
def positions_figure(fractions: Sequence[float] | None, with_sum: bool = False) -> str:
    """Acceptance by draft position as HTML; "—" with a reason when the run has none.

    With `with_sum`, the sum over positions follows: accepted tokens per draft, which is tokens
    per verification - 1 (docs/metrics.md, Per-position acceptance).
    """
    if not fractions:
        return _missing(NO_POSITIONS)
    text = positions_text(fractions)
    if with_sum:
        text += f" (sum {sum(fractions):.2f} accepted per draft = tokens per verification \u2212 1)"
    return format_html("<span>{}</span>", text)


def _missing(reason: str) -> str:
    return format_html('<span class="missing" title="{}">—</span>', reason)


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for a <pre> (escaped by the template like any other text)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)
