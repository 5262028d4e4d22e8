"""The claims pages' filters: a verdict in the reader's words, a check's verdict counts, a dict's item."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext

from claims.models import Check
from claims.results import verdict_counts as counts
from measure.words import gettext_noop

register = template.Library()

# The verdicts (claims.core.verdicts.VERDICTS) as a person reads them.
VERDICT_LABELS = {
    "exceeds-hardware": gettext_noop("exceeds hardware"),
    "not-comparable": gettext_noop("not comparable"),
    "lower": gettext_noop("lower"),
    "higher": gettext_noop("higher"),
    "inconclusive": gettext_noop("inconclusive"),
    "reproduced": gettext_noop("reproduced"),
    "unmeasured": gettext_noop("unmeasured"),
}


@register.filter
def verdict_label(verdict: str) -> str:
    """The verdict in the reader's language ("—" for none yet)."""
    return gettext(VERDICT_LABELS[verdict]) if verdict in VERDICT_LABELS else "—"


@register.filter
def verdict_counts(check: Check) -> list[tuple[str, int]]:
    """The check's verdicts and how many figures got each."""
    return counts(check)


@register.filter
def get_item(mapping: dict[Any, Any], key: Any) -> Any:
    """``mapping[key]``, None when it has no such key."""
    return mapping.get(key)


@register.filter
def md_cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: its pipes escaped, its lines joined."""
    return " ".join(str(value).replace("|", "\\|").split())
