"""Typed run results: what a job kind's summary holds, checked when it is stored and when it is read.

Each job kind declares its summary type (a `RunSummary` subclass) in its kind.py beside its
parameters and its worker steps. The fields typed there are the ones pages, exports, scorecards and
alerts read: a figure over requests is a `Spread`, acceptance is `Pooled` (docs/metrics.md,
Acceptance), a quality score a fraction with the counts it is over. Other keys (the samples' detail,
the engine's counters) pass as they are. A stored summary carries `schema_version`; version 1 is a
summary from before acceptance was pooled, upgraded by migration runs/0014 and stamped 2 by 0015.
Plain Python (pydantic), no Django.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = [
    "SCHEMA_VERSION",
    "Breakdown",
    "Figures",
    "Imported",
    "Pooled",
    "RequestFigures",
    "RunSummary",
    "Share",
    "Spread",
    "SummaryError",
    "checked",
]

SCHEMA_VERSION = 2


class Spread(BaseModel):
    """A figure over a run's requests (measure.stats.summarize): median, range, n; intervals optional."""

    model_config = ConfigDict(extra="allow")
    median: float
    min: float
    max: float
    n: int


class Pooled(BaseModel):
    """A figure pooled over the run (runs.core.request_figures.pooled_figures): one value, what it pools."""

    model_config = ConfigDict(extra="allow")
    pooled: float | None
    accepted: int | None = None
    drafted: int | None = None
    verifications: int | None = None
    source: str | None = None


@dataclass(frozen=True)
class Share:
    """One row of a breakdown: `count` of `out_of` (needles found of hidden, questions right of answered)."""

    name: str
    count: float
    out_of: float


@dataclass(frozen=True)
class Breakdown:
    """A quality score broken down by one dimension (haystack length, depth, category)."""

    title: str  # marked for translation
    counted: str  # what out_of counts, marked: "needles", "questions"
    shares: list[Share]


class RunSummary(BaseModel):
    """What every run's summary may hold; a job kind's own type adds the figures it reports."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = SCHEMA_VERSION
    telemetry: dict[str, Any] | None = None
    roofline: dict[str, Any] | None = None

    def breakdowns(self) -> list[Breakdown]:
        """The headline score broken down (the run page's tables); none unless the job has some."""
        return []


class Figures(BaseModel):
    """The per-request figures of a group of requests: a run's, an output type's, one lookahead's."""

    model_config = ConfigDict(extra="allow")
    ttft_s: Spread | None = None
    ttft_engine_s: Spread | None = None
    decode_tps_client: Spread | None = None
    decode_tps_engine: Spread | None = None
    prefill_tps: Spread | None = None
    e2e_s: Spread | None = None
    acceptance_rate: Pooled | None = None
    tokens_per_verification: Pooled | None = None
    acceptance_rate_per_request: Spread | None = None
    tokens_per_verification_per_request: Spread | None = None


class RequestFigures(RunSummary, Figures):
    """A summary with the per-request figures at its top (the speed job's)."""


class Imported(RunSummary, Figures):
    """A load level read from another tool's result file (runs.core.imports): its figures under
    SparkDash's keys, the tool's own stated medians, and per figure how the tool's definition differs."""

    tool: str
    tool_version: str = ""
    concurrency: int | None = None
    tpot_s: Spread | None = None
    itl_s: Spread | None = None
    total_tps: Spread | None = None
    attempted: int = 0
    failed_by_reason: dict[str, int] = {}
    stated: dict[str, float] = {}
    notes: dict[str, str] = {}


class SummaryError(ValueError):
    """A summary that does not hold what its job kind declares."""


def checked(summary_type: type[RunSummary], summary: Mapping[str, Any]) -> RunSummary:
    """`summary` read as `summary_type`; SummaryError names the fields that do not fit."""
    try:
        return summary_type.model_validate(dict(summary))
    except ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise SummaryError(f"summary does not hold what its job declares ({wrong})") from None
