"""The lossless check: greedy answers with speculative decoding at the config's lookahead and
without, compared token for token."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.lossless.loop import LosslessJob, run_lossless
from runs.core.jobs.params import IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.speed import kind as speed
from runs.core.jobs.summary import RunSummary
from runs.core.readings import Benchmark, ScoredMetric, Summary

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "identical_share",
        gettext_noop("identical answers"),
        "%",
        "answers identical with and without drafting / answers",
        scale=100,
        over_requests="value",
    ),
    Metric(
        "all_identical",
        gettext_noop("every answer identical"),
        "",
        "a lossless check whose every answer was identical",
        over_requests="value",
        over_runs="count",
    ),
)


PARAMS: dict[str, Param] = {
    "max_tokens": IntParam(gettext_noop("max tokens per answer"), 1, 131_072, None,
        what=gettext_noop("the most tokens each greedy answer may generate, with drafting and without; "
                          "answers cut there are compared up to the cut, and the run says how many were")),
}


def _share(summary: Summary) -> float | None:
    share = summary.get("identical_share")
    return float(share) if isinstance(share, int | float) else None


def _all_identical(summary: Summary) -> bool | None:
    value = summary.get("all_identical")
    return value if isinstance(value, bool) else None


METRICS = (
    ScoredMetric("Lossless", "identical_share", _share, out_of=lambda s: s.get("answers"),
           out_of_unit=gettext_noop("answers")),
    ScoredMetric("Lossless", "all_identical", _all_identical),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    if ctx.at_lookahead is None:
        raise ValueError("a lossless check needs an engine it can relaunch with drafting on and off")
    job = LosslessJob(speed.speed_job(ctx), ctx.config.lookahead)
    return await run_lossless(ctx.at_lookahead, job, ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    tokens = (Words(gettext_noop("%(n)s max tokens"), n=params["max_tokens"]) if params.get("max_tokens")
              else Words(gettext_noop("the config's max tokens")))
    return Words.joined(" · ", [Words(gettext_noop("drafting on and off, greedy")), tokens])



class LosslessSummary(RunSummary):
    """Answers identical with and without drafting, of the answers compared."""

    identical_share: float | None = None
    identical: int | None = None
    answers: int | None = None
    all_identical: bool | None = None


JOB = JobSpec(
    summary_type=LosslessSummary,
    describe=describe,
    name="lossless", label=gettext_noop("Lossless check"),
    order=25, params=PARAMS, run=run,
    benchmarks=(Benchmark("Lossless", "lossless"),), metrics=METRICS,
    engine="per-lookahead", needs_drafting=True,
)
