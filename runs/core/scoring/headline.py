"""A run's headline: the one figure its job is known by, with its 95 % interval and its count.

A speed-like headline is a spread over requests (its median's bootstrap interval, n requests); a
quality score out of questions, tasks, needles or answers is a share with a Wilson interval and
"k of n". The runs list, the results table and the run page read it from here. Plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from measure.stats import interval, share_interval
from measure.words import gettext_noop
from runs.core import registry
from runs.core.readings import ScoredMetric, Summary

__all__ = ["Headline", "headline_of"]


@dataclass(frozen=True)
class Headline:
    """The headline's value (as stored: 0..1 for a share), its interval, and what it counts over."""

    metric: ScoredMetric
    value: float
    low: float | None = None
    high: float | None = None
    count: float | None = None  # k of a share: correct answers, passed tasks, needles found
    out_of: float | None = None  # n: the questions, tasks or requests it is over
    counted: str = ""  # what n counts: "tasks", "questions", "requests"


def headline_of(job: str, summary: Summary | None) -> Headline | None:
    """The headline of a run of `job` with `summary`; None for an unknown job, no figure, or a
    summary that does not hold what its job kind declares (runs.core.jobs.summary)."""
    spec = registry.JOBS.get(job)
    if spec is None or spec.results(summary) is None:  # none, or not what its job declares
        return None
    assert summary is not None
    metric = spec.headline
    figure = summary.get(metric.key)
    if isinstance(figure, Mapping) and "median" in figure:
        return _of_spread(metric, figure)
    value = metric.value(summary)
    if value is None or isinstance(value, bool):
        return None
    out_of = metric.out_of(summary) if metric.out_of else None
    if not isinstance(out_of, int | float) or out_of <= 0 or metric.unit != "%":
        return Headline(metric, float(value))
    count = round(float(value) * out_of)
    low_high = share_interval(count, out_of)
    low, high = low_high if low_high else (None, None)
    return Headline(metric, float(value), low, high, count, out_of, metric.out_of_unit)


def _of_spread(metric: ScoredMetric, spread: Mapping[str, Any]) -> Headline:
    low, high = interval(spread)
    return Headline(metric, float(spread["median"]), low, high, None, spread.get("n"),
                    gettext_noop("requests"))
