"""Template helpers that say what became of a run's requests (runs/core/outcomes.py, docs/metrics.md).

The texts are in the reader's language; the failure reasons the summary stores (English) are
translated where they are shown.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from runs.core.outcomes import FAILED_SHARE_LIMIT, over_failed_share

register = template.Library()


def _reasons(outcomes: Mapping[str, Any]) -> str:
    """The reasons and their counts, "http 500 3, timeout 1", in the reader's language."""
    return ", ".join(f"{gettext(reason)} {n}" for reason, n in outcomes.get("failed_by_reason", {}).items())


def _note(summary: Mapping[str, Any] | None) -> str:
    """What outcomes.failures_note says ("3 of 24 requests failed (12.5 %: http 500 3)"), or ""."""
    outcomes = (summary or {}).get("outcomes")
    if not isinstance(outcomes, Mapping) or not outcomes.get("failed"):
        return ""
    return gettext("%(failed)s of %(attempted)s requests failed (%(share)s %%: %(reasons)s)") % {
        "failed": outcomes["failed"], "attempted": outcomes["attempted"],
        "share": f"{100 * outcomes['failed_share']:.1f}", "reasons": _reasons(outcomes),
    }


@register.simple_tag
def failed_mark(summary: Mapping[str, Any] | None) -> SafeString | str:
    """The mark "⚠ 25 % failed" (its title the reasons) where over FAILED_SHARE_LIMIT of the requests
    failed, "3 failed" in grey where fewer did, "" where none did or the job counts no outcomes."""
    note = _note(summary)
    if not note:
        return ""
    outcomes = (summary or {})["outcomes"]
    if over_failed_share(summary):
        limit = f"{100 * FAILED_SHARE_LIMIT:g}"
        title = gettext("%(note)s: over %(limit)s %% failed") % {"note": note, "limit": limit}
        share = gettext("⚠ %(share)s %% failed") % {"share": f"{100 * outcomes['failed_share']:.0f}"}
        return format_html('<span class="failed-share" data-failed-share title="{}">{}</span>', title, share)
    failed = gettext("%(failed)s failed") % {"failed": outcomes["failed"]}
    return format_html('<small class="meta" title="{}">{}</small>', note, failed)


@register.simple_tag
def outcomes_line(summary: Mapping[str, Any] | None) -> SafeString | str:
    """The run page's line under its figures: "Figures over 9 of 12 requests: 3 failed (http 500 3);
    9 cut by max tokens, 0 stopped early.", or "" where the job counts no outcomes."""
    outcomes = (summary or {}).get("outcomes")
    if not isinstance(outcomes, Mapping):
        return ""
    failed = gettext("none failed")
    if outcomes["failed"]:
        failed = gettext("%(failed)s failed (%(reasons)s)") % {
            "failed": outcomes["failed"], "reasons": _reasons(outcomes)}
    text = gettext(
        "Figures over %(succeeded)s of %(attempted)s requests: %(failed)s; "
        "%(cut)s cut by max tokens, %(early)s stopped early."
    ) % {"succeeded": outcomes["succeeded"], "attempted": outcomes["attempted"], "failed": failed,
         "cut": outcomes["cut_by_max_tokens"], "early": outcomes["stopped_early"]}
    return format_html(
        '<p class="meta" id="run-outcomes" data-attempted="{}" data-succeeded="{}" data-failed="{}">{}</p>',
        outcomes["attempted"], outcomes["succeeded"], outcomes["failed"], text,
    )
