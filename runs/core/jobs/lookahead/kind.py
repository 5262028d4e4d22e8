"""The lookahead sweep: the speed job's requests at several lookahead (draft) lengths."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.lookahead.loop import LookaheadJob, run_lookahead
from runs.core.jobs.params import IntListParam, IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec, count
from runs.core.jobs.speed import kind as speed
from runs.core.jobs.summary import Figures, RunSummary
from runs.core.readings import ScoredMetric, Summary

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "best_decode_tps",
        gettext_noop("decode at the best length"),
        "tok/s",
        "a lookahead sweep's decode (client) at its fastest lookahead",
        over_requests="value",
    ),
)


PARAMS: dict[str, Param] = {
    "lengths": IntListParam(gettext_noop("lookahead lengths"), 0, 64, (0, 2, 4, 8, 12),
        what=gettext_noop("draft lengths to measure, the engine restarted (or, for Ollama, re-aliased) for "
                          "each; 0 measures without drafting")),
    "reps": IntParam(gettext_noop("repetitions"), 1, 50, 1,
        what=gettext_noop("times the set of 6 prompts is sent at each length")),
    "warmup": IntParam(gettext_noop("warm-up requests"), 0, 5, 1,
        what=gettext_noop("requests sent and not measured at each length, after the engine restarts")),
    "max_tokens": IntParam(gettext_noop("max tokens per answer"), 1, 131_072, None,
        what=gettext_noop("the most tokens each answer may generate, reasoning included; the prompt's own "
                          "tokens (its prefill) do not count")),
}


def _best_lookahead_tps(summary: Summary) -> float | None:
    speeds = [
        figures["all"]["decode_tps_client"]["median"]
        for figures in (summary.get("lengths") or {}).values()
        if (figures.get("all") or {}).get("decode_tps_client")
    ]
    return max(speeds) if speeds else None


async def run(ctx: JobContext) -> dict[str, Any]:
    if ctx.at_lookahead is None:
        raise ValueError("a lookahead sweep needs an engine it can relaunch per length")
    job = LookaheadJob(speed.speed_job(ctx), tuple(ctx.params.get("lengths", (0, 2, 4, 8, 12))))
    return await run_lookahead(ctx.at_lookahead, job, ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    lengths = ", ".join(str(n) for n in params.get("lengths", ()))
    reps = Words.ngettext("%(count)s repetition", "%(count)s repetitions", **count(params.get("reps")))
    if params.get("max_tokens"):
        reps = Words.joined(", ", [reps, Words(gettext_noop("%(n)s max tokens"), n=params["max_tokens"])])
    return Words.joined(" · ", [Words(gettext_noop("lookahead %(lengths)s"), lengths=lengths), reps])



class LookaheadSummary(RunSummary):
    """Per lookahead length: the figures of all requests ("all") and of each output type."""

    lengths: dict[str, dict[str, Figures]] = {}


JOB = JobSpec(
    summary_type=LookaheadSummary,
    describe=describe,
    name="lookahead", label=gettext_noop("Lookahead sweep"), order=20, params=PARAMS, run=run,
    headline=ScoredMetric("Lookahead sweep", "best_decode_tps", _best_lookahead_tps),
    engine="per-lookahead",
    tour=("sweeps", {"lengths": [0, 2, 4, 8, 12], "reps": 1, "warmup": 0,
                    "max_tokens": speed.TOUR_MAX_TOKENS}),
)
