"""Reading a run's results outside its job kind's own files: one accessor, driven by declarations.

Pages, exports, template tags and commands read a stored summary through `figure` (a metric the
catalogue declares, measure.catalog, as its page shows it: a median, pooled, or one value) or
`recorded` (any other field, one that some RunSummary type declares: runs.core.jobs.summary and
the job kinds' own types, or `WorkerAdded` and `JobDetail` here). A key declared nowhere raises
`UndeclaredKey`, so a misspelt key fails a test rather than showing "—" on a page. `typed` reads
the summary as its job kind's RunSummary. Plain Python, no Django.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from measure import catalog
from measure.stats import figure_value
from runs.core import registry
from runs.core.jobs.summary import RunSummary

__all__ = ["JobDetail", "UndeclaredKey", "WorkerAdded", "declared_fields", "figure", "recorded", "stored",
           "summary_of", "typed"]


class UndeclaredKey(KeyError):
    """A summary key that neither the metric catalogue nor any RunSummary type declares."""


class WorkerAdded(RunSummary):
    """What the worker adds to any job's summary beside its job's own figures (runs.worker.execution):
    the engine's counters and startup, the client-vs-engine cross-checks, the requests' outcomes."""

    engine_startup_s: float | None = None
    engine_startups: list[dict[str, Any]] | None = None
    spec_decode_metrics: dict[str, Any] | None = None
    spec_by_length: dict[str, Any] | None = None
    acceptance_by_position: list[float] | None = None
    cross_check: dict[str, Any] | None = None
    ttft_check: dict[str, Any] | None = None
    outcomes: dict[str, Any] | None = None
    preheat: Any = None


class JobDetail(RunSummary):
    """Fields some job kinds write and pages read that their own types (runs/core/registry) do not
    declare yet; each belongs in its job kind's type, where it can be moved from here."""

    prompt_set: str | None = None
    dataset: str | None = None
    by_output_type: dict[str, Any] | None = None
    reasoning_tokens_sources: list[str] | None = None
    budget_hit: int | None = None
    max_tokens: int | None = None
    num_fewshot: int | None = None
    num_fewshot_asked: int | None = None
    passed_plus: int | None = None


@cache
def declared_fields() -> frozenset[str]:
    """Every field some RunSummary type declares: each job kind's, the shared ones, the worker's."""
    types: list[type[RunSummary]] = [spec.summary_type for spec in registry.JOBS.values()]
    types += [WorkerAdded, JobDetail]
    return frozenset(name for summary_type in types for name in summary_type.model_fields)


def summary_of(source: Any) -> Mapping[str, Any]:
    """A run's stored summary (or the summary itself, or a load level's figures); {} for none."""
    summary = source if isinstance(source, Mapping) else getattr(source, "summary", None)
    return summary if isinstance(summary, Mapping) else {}


def figure(source: Any, key: str) -> float | None:
    """A catalogue metric's one value as its page shows it: a pooled figure's value, a spread's
    median, or a plain number; None when the run has none. UndeclaredKey for a key not declared."""
    if key not in catalog.CATALOG:
        raise UndeclaredKey(f"{key!r} is not a metric of measure.catalog")
    value = summary_of(source).get(key)
    if isinstance(value, Mapping):
        return figure_value(value)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def stored(source: Any, key: str) -> Any:
    """A catalogue metric as stored (a spread, a pooled figure, a number); UndeclaredKey if undeclared."""
    if key not in catalog.CATALOG:
        raise UndeclaredKey(f"{key!r} is not a metric of measure.catalog")
    return summary_of(source).get(key)


def recorded(source: Any, key: str, default: Any = None) -> Any:
    """A field of a run's summary that a RunSummary type or the catalogue declares (`default` when the
    run has none); UndeclaredKey for any other key."""
    if key not in declared_fields() and key not in catalog.CATALOG:
        raise UndeclaredKey(f"{key!r} is declared by no RunSummary type nor measure.catalog")
    value = summary_of(source).get(key)
    return default if value is None else value


def typed(job: str, source: Any) -> RunSummary | None:
    """The summary read as its job kind's RunSummary; None for none, or one that does not fit."""
    spec = registry.JOBS.get(job)
    return spec.results(summary_of(source)) if spec is not None else None
