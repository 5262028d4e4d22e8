"""The job kinds as pages name them together, read from the registry, so no template lists them."""
from __future__ import annotations

from typing import Literal

from django import template
from django.utils.translation import gettext

from runs.core.registry import JOBS

register = template.Library()


@register.simple_tag
def job_labels(which: Literal["scored", "compared"]) -> str:
    """The labels, in the reader's language, of the kinds a scorecard scores ("scored": those with
    benchmarks) or a compare table shows ("compared": those, and those with rows of their own)."""
    kinds = [spec for spec in JOBS.values() if spec.benchmarks or (which == "compared" and spec.compared)]
    return ", ".join(gettext(spec.label) for spec in kinds)
