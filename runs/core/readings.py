"""What is read from a run's summary: scorecard metrics, the benchmarks they belong to, Prometheus figures.

Each job kind's kind.py (runs/core/jobs/<kind>/) declares its readings with these; the scoring
(runs.core.scoring), the pages and GET /metrics read them from there. Per-request figures are
another thing: runs.core.request_figures. Plain Python, no Django.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from measure import catalog
from measure.stats import figure_value

__all__ = [
    "Benchmark",
    "Exported",
    "Reader",
    "ScoredMetric",
    "Summary",
    "field_of",
    "figure_of",
    "median_of",
    "one",
    "share_of",
]

Summary = Mapping[str, Any]


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: the runs of one job (and, for EvalPlus, one dataset of it)."""

    name: str
    job: str
    dataset: str | None = None
    where: Callable[[Summary], bool] | None = None  # a further test of the summary (imported runs' tool)

    def holds(self, job: str, summary: Summary) -> bool:
        if job != self.job or (self.dataset is not None and summary.get("dataset") != self.dataset):
            return False
        return self.where is None or self.where(summary)


@dataclass(frozen=True)
class ScoredMetric:
    """A scored metric, one scorecard row: a catalogue Metric (measure.catalog) read as one value
    per run, under a benchmark.

    Its label, unit, scale, digits and direction are the catalogue's; a key nobody declared is
    refused here. A metric whose catalogue entry gathers over runs by "count" reads True/False per
    run, shown as "k of n runs". `out_of` reads the denominator a score is out of (table rows,
    questions), shown by the label. `alert` False keeps a metric out of regression alerts (one
    that another metric already covers).
    """

    benchmark: str
    key: str
    value: Callable[[Summary], float | bool | None]
    out_of: Callable[[Summary], Any] | None = None
    out_of_unit: str = ""
    alert: bool = True

    def __post_init__(self) -> None:
        catalog.get(self.key)

    @property
    def declared(self) -> catalog.Metric:
        return catalog.get(self.key)

    @property
    def label(self) -> str:
        return self.declared.label

    @property
    def unit(self) -> str:
        return self.declared.unit

    @property
    def higher_is_better(self) -> bool:
        return self.declared.higher_is_better

    @property
    def scale(self) -> float:
        return self.declared.scale

    @property
    def digits(self) -> int:
        return self.declared.digits

    @property
    def count(self) -> bool:
        return self.declared.over_runs == "count"


def median_of(key: str) -> Callable[[Summary], float | None]:
    """A reader of the median of a Spread in a run summary (None when absent)."""
    def read(summary: Summary) -> float | None:
        spread = summary.get(key)
        return spread.get("median") if isinstance(spread, Mapping) else None

    return read


def figure_of(key: str) -> Callable[[Summary], float | None]:
    """A reader of a summary figure's one value: pooled (acceptance) or the median of a spread."""
    return lambda summary: figure_value(summary.get(key))


def field_of(key: str) -> Callable[[Summary], Any]:
    """A reader of one plain field of a run summary."""
    return lambda summary: summary.get(key)


def share_of(part: str, whole: str) -> Callable[[Summary], float | None]:
    """A reader of part / whole from a run summary (None without a whole)."""
    def read(summary: Summary) -> float | None:
        total = summary.get(whole)
        return summary[part] / total if total and summary.get(part) is not None else None

    return read


# (extra label values, value) for each series one run gives a Prometheus figure.
Reader = Callable[[Summary], Iterable[tuple[tuple[str, ...], float | None]]]


@dataclass(frozen=True)
class Exported:
    """One Prometheus figure family of a job kind's latest run (GET /metrics): name, help, reader."""

    name: str
    documentation: str
    read: Reader
    extra_labels: tuple[str, ...] = ()

    @classmethod
    def declared(
        cls, name: str, key: str, of: str, read: Reader, extra_labels: tuple[str, ...] = ()
    ) -> Exported:
        """A family whose help text is its metric's catalogue declaration: label, `of` (which run),
        the scale it is exported in (a share as 0-1), and the one-line definition."""
        declared = catalog.get(key)
        share = ", as a fraction 0-1" if declared.unit == "%" else ""
        text = f"{declared.label[:1].upper()}{declared.label[1:]} of {of}{share}; {declared.definition}"
        return cls(name, text, read, extra_labels)


def one(read: Callable[[Summary], float | None]) -> Reader:
    """A reader of one series (no extra labels) from a one-value reader."""
    return lambda summary: [((), read(summary))]
