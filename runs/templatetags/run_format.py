"""Template helpers that show run figures the one way docs/metrics.md defines them.

A summary figure is a median with its spread, "median [min-max] unit (n=N)" (an en dash
in the page), and below it the median's 95 % interval and the p90 and p99, with "= max" where
too few requests were measured for the percentile (figures.interval_text).
The same table of metrics is handed to the run page's scripts as JSON
(runs/core/jobs/speed/view.js, through static/js/format.js), so live updates format figures identically.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

from django import template
from django.template.loader import render_to_string
from django.utils.functional import Promise
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from engines.templatetags.engine_words import words
from measure import catalog
from measure.catalog import (
    ACCEPTANCE_RATE,
    ACCEPTANCE_RATE_PER_REQUEST,
    TOKENS_PER_VERIFICATION,
    TOKENS_PER_VERIFICATION_PER_REQUEST,
)
from measure.stats import share_interval
from measure.text import number_text
from runs.core import registry
from runs.core.jobs.summary import Share
from runs.core.scoring.figures import Spread, figure_text, interval_text, spread_text, value_text
from runs.core.scoring.headline import Headline, headline_of
from runs.core.typed_reads import stored

register = template.Library()

EN_DASH = "\u2013"
NOT_EXPOSED = _("not exposed by this engine")
NOT_YET = _("no data yet")
# SGLang's and Ollama's figures have no per-position counts (docs/metrics.md, Per-position acceptance).
NO_POSITIONS = _("not exposed by this engine (Ollama), or no drafting")
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


def column(key: str) -> SummaryColumn:
    """A run-page figure as the page and its script read it, from its catalogue declaration."""
    declared = catalog.get(key)
    unit = declared.unit
    shown_unit = gettext_lazy(unit) if unit.isalpha() else unit  # "tokens", "runs": words to translate
    return {"key": key, "label": gettext_lazy(declared.label), "unit": shown_unit,
            "scale": declared.scale, "digits": declared.digits}


# The run page's summary figures, in order. Acceptance is pooled over the run (docs/metrics.md,
# Acceptance); the two "per request" figures are the secondary spread, never the headline.
SUMMARY_METRICS: list[SummaryColumn] = [column(key) for key in (
    "ttft_s", "ttft_engine_s", "decode_tps_client", "decode_tps_engine", "prefill_tps", "e2e_s",
    ACCEPTANCE_RATE, TOKENS_PER_VERIFICATION, ACCEPTANCE_RATE_PER_REQUEST,
    TOKENS_PER_VERIFICATION_PER_REQUEST)]
# Shown only for a run whose requests reasoned ("thinking"): see has_reasoning.
REASONING_METRICS: list[SummaryColumn] = [column(key) for key in (
    "ttfr_s", "ttfo_s", "reasoning_tokens", "answer_tokens", "decode_tps_answer")]
REASONING_KEYS = frozenset(m["key"] for m in REASONING_METRICS)


def catalog_columns() -> list[SummaryColumn]:
    """Every catalogue metric as the browser reads it (the run page's "metric-catalog" JSON)."""
    return [column(key) for key in catalog.CATALOG]


def has_reasoning(summary: Mapping[str, Any] | None) -> bool:
    """Whether a run's requests reasoned: a first reasoning token was timed, or reasoning counted."""
    counted = stored(summary, "reasoning_tokens") or {}
    return bool(stored(summary, "ttfr_s")) or bool(counted.get("max"))


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
    stats = stored(summary, key)
    if not stats:
        return _missing(NOT_EXPOSED if key in summary else NOT_YET)
    metric = column(key)
    text = format_spread(stats, metric)
    more = interval_text(stats, str(metric["unit"]), metric["digits"], metric["scale"])
    if not more:  # a summary stored before intervals were
        return format_html("<span>{}</span>", text)
    shown = words(more)
    if hover:
        return format_html('<span title="{}">{}</span>', shown, text)
    return format_html('<span><span>{}</span><br><small class="interval">{}</small></span>', text, shown)


@register.simple_tag
def headline_figure(run: Any, hover: bool = False) -> str:
    """The run's job's headline, "pass@1 (plus tests) 62.2 %", with its 95 % interval and count
    ("54.6-69.3 %, 102 of 164 tasks") on a small line, or with `hover` in its title; "—" without
    one."""
    spec = registry.JOBS.get(run.job)
    if spec is None:
        return _missing(NOT_YET)
    found = headline_of(run.job, run.summary)
    label = gettext(spec.headline.label)
    if found is None:
        return format_html("{} {}", label, _missing(NOT_YET if not run.finished else NOT_EXPOSED))
    spread = stored(run, spec.headline.key)
    if isinstance(spread, dict) and "median" in spread:  # a spread over requests: shown whole
        return format_html("{} <span>{}</span>", label, figure_text(spec.headline, cast(Spread, spread)))
    text = value_text(found.metric, found.value)
    more = headline_interval_text(found)
    if not more:
        return format_html("{} <span>{}</span>", label, text)
    if hover:
        return format_html('{} <span title="{}">{}</span>', label, more, text)
    return format_html('{} <span><span>{}</span><br><small class="interval">{}</small></span>', label, text,
                       more)


def headline_interval_text(found: Headline) -> str:
    """The small line: "54.6-69.3 % (95 % interval), 102 of 164 tasks", or "... over 9 requests"."""
    metric, parts = found.metric, []
    if found.low is not None and found.high is not None:
        span = f"{number_text(found.low, metric.scale, metric.digits)}{EN_DASH}" \
               f"{number_text(found.high, metric.scale, metric.digits)} {metric.unit}".rstrip()
        parts.append(gettext("%(span)s (95 %% interval)") % {"span": span})
    if found.count is not None and found.out_of:
        parts.append(gettext("%(k)s of %(n)s %(counted)s") % {
            "k": f"{found.count:g}", "n": f"{found.out_of:g}", "counted": gettext(found.counted)})
    elif found.out_of:
        parts.append(gettext("over %(n)s %(counted)s") % {"n": f"{found.out_of:g}",
                                                           "counted": gettext(found.counted)})
    return ", ".join(parts)


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


@register.simple_tag
def figure_number(value: float | None, key: str) -> str:
    """`value` scaled and rounded as the catalogue declares metric `key` ("15.5" for an acceptance
    of 0.155), so that a template does no arithmetic; "—" without a value."""
    if value is None:
        return "—"
    declared = catalog.get(key)
    return number_text(value, declared.scale, declared.digits)


@register.simple_tag
def percent_of(count: float | None, out_of: float | None) -> str:
    """count / out_of as a whole percent ("17" for 1 of 6), for a sentence that also says "k of n";
    "—" when there is nothing to divide by."""
    if count is None or not out_of:
        return "—"
    return f"{100 * count / out_of:.0f}"


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


@register.simple_tag
def breakdowns(run: Any) -> list[dict[str, Any]]:
    """The run's headline score broken down (its summary type's breakdowns): each row's share of its
    total, the share's 95 % interval (Wilson) and "k of n"; [] for a job without any."""
    spec = registry.JOBS.get(run.job)
    results = spec.results(run.summary) if spec else None
    if results is None:
        return []
    return [{"title": gettext(part.title), "rows": [_share_row(share, part.counted) for share in part.shares]}
            for part in results.breakdowns()]


def _share_row(share: Share, counted: str) -> dict[str, str]:
    low_high = share_interval(share.count, share.out_of)
    shown = {"name": share.name, "count": gettext("%(k)s of %(n)s %(counted)s") % {
        "k": f"{share.count:g}", "n": f"{share.out_of:g}", "counted": gettext(counted)}}
    if low_high is None:
        return shown | {"share": "\u2014", "interval": ""}
    low, high = low_high
    return shown | {"share": f"{number_text(share.count / share.out_of, 100, 1)} %",
                    "interval": f"{number_text(low, 100, 1)}{EN_DASH}{number_text(high, 100, 1)} %"}
