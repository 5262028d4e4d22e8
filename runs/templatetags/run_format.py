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
from django.template.loader import render_to_string
from django.utils.functional import Promise
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from engines.templatetags.engine_words import words
from runs.core import registry
from runs.core.scoring.figures import Spread, figure_text, interval_text, spread_text, value_text

register = template.Library()

EN_DASH = "\u2013"
NOT_EXPOSED = _("not exposed by this engine")
NOT_YET = _("no data yet")
# SGLang's and Ollama's figures have no per-position counts (docs/metrics.md, Per-position acceptance).
NO_POSITIONS = _("not exposed by this engine (Ollama), or no drafting")
TOKENS = _("tokens")
# The status badge's words (templates/runs/_status.html); data-status keeps the English slug.
STATUS_WORDS = {
    "queued": pgettext_lazy("run status", "queued"),
    "running": pgettext_lazy("run status", "running"),
    "succeeded": pgettext_lazy("run status", "succeeded"),
    "failed": pgettext_lazy("run status", "failed"),
    "cancelled": pgettext_lazy("run status", "cancelled"),
}


class SummaryColumn(TypedDict):
    key: str
    label: str | Promise  # translated where shown
    unit: str | Promise
    scale: float
    digits: int


SUMMARY_METRICS: list[SummaryColumn] = [
    {"key": "ttft_s", "label": "TTFT", "unit": "s", "scale": 1, "digits": 3},
    {"key": "ttft_engine_s", "label": _("TTFT (engine)"), "unit": "s", "scale": 1, "digits": 3},
    {"key": "decode_tps_client", "label": _("decode (client)"), "unit": "tok/s", "scale": 1, "digits": 1},
    {"key": "decode_tps_engine", "label": _("decode (engine)"), "unit": "tok/s", "scale": 1, "digits": 1},
    {"key": "prefill_tps", "label": _("prefill"), "unit": "tok/s", "scale": 1, "digits": 0},
    {"key": "e2e_s", "label": "E2E", "unit": "s", "scale": 1, "digits": 2},
    # Pooled over the run (docs/metrics.md, Acceptance); stored as a 0..1 fraction, shown as a percentage.
    {"key": "acceptance_rate", "label": _("acceptance rate"), "unit": "%", "scale": 100, "digits": 1},
    {"key": "tokens_per_verification", "label": _("tokens per verification"), "unit": TOKENS,
     "scale": 1, "digits": 2},
    # Secondary: how the requests' own ratios spread; never the headline.
    {"key": "acceptance_rate_per_request", "label": _("acceptance rate, spread over requests"), "unit": "%",
     "scale": 100, "digits": 1},
    {"key": "tokens_per_verification_per_request",
     "label": _("tokens per verification, spread over requests"), "unit": TOKENS, "scale": 1, "digits": 2},
]
# Shown only for a run whose requests reasoned ("thinking"): see has_reasoning.
REASONING_METRICS: list[SummaryColumn] = [
    {"key": "ttfr_s", "label": _("TTFR (first reasoning token)"), "unit": "s", "scale": 1, "digits": 3},
    {"key": "ttfo_s", "label": _("TTFO (first answer token)"), "unit": "s", "scale": 1, "digits": 3},
    {"key": "reasoning_tokens", "label": _("reasoning tokens"), "unit": TOKENS, "scale": 1, "digits": 0},
    {"key": "answer_tokens", "label": _("answer tokens"), "unit": TOKENS, "scale": 1, "digits": 0},
    {"key": "decode_tps_answer", "label": _("decode (answer tokens)"), "unit": "tok/s", "scale": 1,
     "digits": 1},
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
    return spread_text(stats, str(metric["unit"]), metric["digits"], metric["scale"])


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
    more = interval_text(stats, str(metric["unit"]), metric["digits"], metric["scale"])
    if not more:  # a summary stored before intervals were
        return format_html("<span>{}</span>", text)
    shown = words(more)
    if hover:
        return format_html('<span title="{}">{}</span>', shown, text)
    return format_html('<span><span>{}</span><br><small class="interval">{}</small></span>', text, shown)


@register.simple_tag
def headline_figure(run: Any) -> str:
    """The run's job's headline (its registry entry's): "decode (client) 41.2 tok/s", or "—" without one."""
    spec = registry.JOBS.get(run.job)
    if spec is None:
        return _missing(NOT_YET)
    metric, summary = spec.headline, run.summary or {}
    label = gettext(metric.label)
    spread = summary.get(metric.key)
    if isinstance(spread, dict) and "median" in spread:  # a spread over requests: shown whole
        return format_html("{} <span>{}</span>", label, figure_text(metric, cast(Spread, spread)))
    value = metric.value(summary) if summary else None
    if value is None or isinstance(value, bool):
        return format_html("{} {}", label, _missing(NOT_YET if not run.finished else NOT_EXPOSED))
    return format_html("{} <span>{}</span>", label, value_text(metric, value))


def positions_text(fractions: Sequence[float]) -> str:
    """Acceptance by draft position as "position 1: 90.0 %, 2: 75.0 %" (format.js positions())."""
    listed = ", ".join(f"{i}: {100 * f:.1f} %" for i, f in enumerate(fractions, 1))
    return gettext("position %(positions)s") % {"positions": listed}


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
        note = gettext("(sum %(sum)s accepted per draft = tokens per verification − 1)")  # noqa: RUF001 (the minus sign)
        text += " " + note % {"sum": f"{sum(fractions):.2f}"}
    return format_html("<span>{}</span>", text)


@register.filter
def status_word(status: str) -> str:
    """A run status in the reader's language ("queued" -> 待機中)."""
    return str(STATUS_WORDS.get(status, status))


@register.simple_tag
def job_of_config(run: Any) -> SafeString:
    """The run page's "Speed of <config link> on <engine>", one sentence in the reader's language."""
    config = format_html('<a href="{}">{}</a>', run.config.get_absolute_url(), run.config.name)
    engine = mark_safe(render_to_string("engines/_engine.html", {"engine": run.config.engine}).strip())
    words = {"job": conditional_escape(run.get_job_display()), "config": config, "engine": engine}
    return mark_safe(conditional_escape(gettext("%(job)s of %(config)s on %(engine)s")) % words)


def _missing(reason: str | Promise) -> str:
    return format_html('<span class="missing" title="{}">—</span>', reason)


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for a <pre> (escaped by the template like any other text)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)
