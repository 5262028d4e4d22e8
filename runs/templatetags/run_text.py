"""Template helpers that say a run's stored warnings in the reader's language (runs/core/worded.py).

A warning stores its English "message" (for exports and tests) and, since the dashboard speaks
Japanese too, the "text" template and "params" it was said from; a run stored before that keeps
only its message, which the page shows as stored.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy

from runs.actions import scheduler
from runs.core.worded import say

register = template.Library()

# The label before each warning on the run page, by its code (stored under "kind"); the code itself
# stays the stored identifier.
CODE_LABELS = {
    "throttled": pgettext_lazy("warning code", "throttled"),
    "cross-check": pgettext_lazy("warning code", "cross-check"),
    "ttft-check": pgettext_lazy("warning code", "ttft-check"),
    "read-loop": pgettext_lazy("warning code", "read-loop"),
    "cache-discard": pgettext_lazy("warning code", "cache-discard"),
    "port": pgettext_lazy("warning code", "port"),
    "above-ceiling": pgettext_lazy("warning code", "above-ceiling"),
    "failed requests": pgettext_lazy("warning code", "failed requests"),
    "waiting": pgettext_lazy("warning code", "waiting"),
    "counted-by-sparkdash": pgettext_lazy("warning code", "counted by SparkDash"),
    "simulated-machine": pgettext_lazy("warning code", "simulated machine"),
    "client-bound": pgettext_lazy("warning code", "client-bound"),
}


@register.simple_tag
def warning_message(warning: Mapping[str, Any]) -> str:
    """The warning in the reader's language where it stores its template, else its message as stored."""
    text, params = warning.get("text"), warning.get("params")
    if not isinstance(text, str) or not isinstance(params, Mapping):
        return str(warning.get("message", ""))
    try:
        return say(text, params, gettext)
    except (KeyError, TypeError, ValueError):  # a template that no longer fits its stored figures
        return str(warning.get("message", ""))


@register.simple_tag
def warning_label(code: str) -> str:
    """The label of a warning's code in the reader's language; an unknown code as stored."""
    label = CODE_LABELS.get(code)
    return str(label) if label is not None else code



@register.simple_tag
def scheduler_running() -> bool:
    """Whether anything fires schedules now (runs.actions.scheduler.running)."""
    return scheduler.running()


# A webhook's stored outcome (runs.actions.webhooks.post_json, English) in the reader's language.
_OUTCOMES = [
    (re.compile(r"delivered \(HTTP (\d+)\)"), gettext_lazy("delivered (HTTP %(status)s)")),
    (re.compile(r"delivery failed \(HTTP (\d+)\)"), gettext_lazy("delivery failed (HTTP %(status)s)")),
    (re.compile(r"delivery failed"), gettext_lazy("delivery failed")),
    (re.compile(r"refused: .*"),
     gettext_lazy("refused: the webhook's host is not an address webhooks may reach")),
]


@register.filter
def webhook_outcome(outcome: str) -> str:
    """The outcome in the reader's language; one of another shape as stored."""
    for pattern, text in _OUTCOMES:
        if found := pattern.fullmatch(outcome or ""):
            return str(text) % {"status": found.group(1)} if found.groups() else str(text)
    return outcome
