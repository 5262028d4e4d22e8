"""The prefix-cache probe: grow one conversation, insert an unrelated request, continue it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engines import kinds
from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.params import IntParam, Param
from runs.core.jobs.prefix_cache.loop import PrefixCacheJob, run_prefix_cache
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.summary import RunSummary
from runs.core.readings import ScoredMetric, field_of

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "ttft_ratio",
        gettext_noop("continuation TTFT ratio"),
        "x",
        "TTFT of a prompt continuing a cached prefix / TTFT of the same prompt cold",
        "lower",
        digits=2,
        over_requests="value",
    ),
)


PARAMS: dict[str, Param] = {
    "steps": IntParam(gettext_noop("conversation steps"), 1, 200, 30,
        what=gettext_noop("requests of one growing conversation; each sends everything before it again, "
                          "plus new text")),
    "bytes_per_step": IntParam(gettext_noop("source bytes per step"), 100, 1_000_000, 6000,
        what=gettext_noop("source text added to the conversation at each step")),
    "answer_tokens": IntParam(gettext_noop("answer tokens"), 1, 1024, 16,
        what=gettext_noop("the most tokens each step's answer may generate (kept short: the probe times the "
                          "prompt's prefill)")),
}


async def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    sampling = ctx.config.sampling
    job = PrefixCacheJob(ctx.config.model, params["steps"], params["bytes_per_step"], params["answer_tokens"],
                         thinking=sampling.get("thinking"), reasoning_effort=sampling.get("reasoning_effort"))
    summary = await run_prefix_cache(ctx.client, job, ctx.progress)
    # A detected discard comes with the fix for this engine kind.
    detected = summary.get("cache_discard_detected")
    summary["fix"] = kinds.get(ctx.config.engine_kind).cache_fix if detected else None
    return summary


def describe(params: Mapping[str, Any]) -> Words:
    steps = Words(gettext_noop("%(steps)s steps of %(bytes)s bytes"),
                  steps=params.get("steps"), bytes=params.get("bytes_per_step"))
    answers = Words(gettext_noop("%(n)s-token answers"), n=params.get("answer_tokens"))
    return Words.joined(" · ", [steps, answers])



class PrefixCacheSummary(RunSummary):
    """The continuation's TTFT over the cold prompt's."""

    ttft_ratio: float | None = None


JOB = JobSpec(
    summary_type=PrefixCacheSummary,
    describe=describe,
    name="prefix-cache", label=gettext_noop("Prefix-cache probe"),
    order=50, params=PARAMS, run=run, progress_unit=gettext_noop("steps"),
    headline=ScoredMetric("Prefix-cache probe", "ttft_ratio", field_of("ttft_ratio")),
    tour=("warnings", {}),  # the cache-discard warning
)
