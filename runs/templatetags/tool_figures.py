"""Other tools' figures, for imported runs (runs.core.imports): an imported run's figures beside the
tool's own stated ones, with how definitions differ, and a tool's name as the pages show it."""
from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.translation import gettext

from measure import catalog
from measure.text import number_text
from runs.core.imports import TOOLS
from runs.core.typed_reads import recorded, stored
from runs.templatetags.run_format import _missing, summary_figure

register = template.Library()

# The figures an imported run may hold, in the order its page lists them.
SHOWN = ("ttft_s", "decode_tps_client", "tpot_s", "itl_s", "e2e_s", "total_tps", "prefill_tps",
         "decode_tps_engine")


@register.simple_tag
def imported_rows(summary: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per figure: ours, the tool's stated median (or mean), and the definitional note.

    A figure the tool did not measure reads "not measured by <tool>", never 0.
    """
    summary = summary or {}
    tool = TOOLS.get(recorded(summary, "tool", ""), recorded(summary, "tool", ""))
    stated, notes = recorded(summary, "stated", {}), recorded(summary, "notes", {})
    rows = []
    for key in SHOWN:
        metric = catalog.get(key)
        figure = (summary_figure(summary, key) if stored(summary, key)
                  else _missing(gettext("not measured by %(tool)s") % {"tool": tool}))
        note = gettext(notes[key]) if key in notes else ""
        rows.append({"key": key, "label": gettext(metric.label), "figure": figure,
                     "stated": _stated(stated, key, metric), "note": note})
    return rows


def _stated(stated: dict[str, float], key: str, metric: catalog.Metric) -> str:
    for name, word in ((key, gettext("median")), (f"{key}_mean", gettext("mean"))):
        if isinstance(stated.get(name), int | float):
            value = number_text(stated[name], metric.scale, metric.digits)
            return format_html("{} {} ({})", value, metric.unit, word)
    return ""


@register.simple_tag
def tool_label(tool: str) -> str:
    """The name a page shows for a tool an imported run was read from."""
    return TOOLS.get(tool, tool)


@register.simple_tag
def metric_number(value: float, metric: catalog.Metric | str) -> str:
    """A figure's value in its catalogue unit and digits; "%" for a share (1 decimal)."""
    if isinstance(metric, str):
        return f"{number_text(value, 100, 1)} %"
    return number_text(value, metric.scale, metric.digits)
