"""Template helpers that say what became of a run's requests (runs/core/outcomes.py, docs/metrics.md)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs.core.outcomes import FAILED_SHARE_LIMIT, failures_note, over_failed_share, over_text

register = template.Library()


@register.simple_tag
def failed_mark(summary: Mapping[str, Any] | None) -> SafeString | str:
    """"⚠ 25 % failed" (its title the reasons) where over FAILED_SHARE_LIMIT of the requests failed,
    "3 failed" in grey where fewer did, "" where none did or the job counts no outcomes."""
    note = failures_note(summary)
    if not note:
        return ""
    outcomes = (summary or {})["outcomes"]
    if over_failed_share(summary):
        title = f"{note}: over {100 * FAILED_SHARE_LIMIT:g} % failed"
        return format_html('<span class="failed-share" data-failed-share title="{}">⚠ {} % failed</span>',
                           title, f"{100 * outcomes['failed_share']:.0f}")
    return format_html('<small class="meta" title="{}">{} failed</small>', note, outcomes["failed"])


@register.simple_tag
def outcomes_line(summary: Mapping[str, Any] | None) -> SafeString | str:
    """The run page's line under its figures: "Figures over 9 of 12 requests: 3 failed (http 500 3);
    9 cut by max_tokens, 0 stopped early.", or "" where the job counts no outcomes."""
    outcomes = (summary or {}).get("outcomes")
    if not isinstance(outcomes, Mapping):
        return ""
    reasons = ", ".join(f"{reason} {n}" for reason, n in outcomes["failed_by_reason"].items())
    failed = f"{outcomes['failed']} failed ({reasons})" if outcomes["failed"] else "none failed"
    return format_html(
        '<p class="meta" id="run-outcomes" data-attempted="{}" data-succeeded="{}" data-failed="{}">'
        "Figures {}: {}; {} cut by max_tokens, {} stopped early.</p>",
        outcomes["attempted"], outcomes["succeeded"], outcomes["failed"], over_text([summary]), failed,
        outcomes["cut_by_max_tokens"], outcomes["stopped_early"],
    )
