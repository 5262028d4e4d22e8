"""The speed job: the prompt set, N repetitions, the config's fixed sampling."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measure.words import Words, gettext_noop
from runs.core.jobs.params import IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec, count
from runs.core.jobs.speed.loop import SpeedJob, run_speed
from runs.core.jobs.summary import RequestFigures
from runs.core.readings import Benchmark, Exported, ScoredMetric, Summary, figure_of, median_of, one

PARAMS: dict[str, Param] = {
    "reps": IntParam(gettext_noop("repetitions"), 1, 50, 3,
        what=gettext_noop("times the set of 6 prompts is sent; each answer is one request")),
    "warmup": IntParam(gettext_noop("warm-up requests"), 0, 5, 1,
        what=gettext_noop("requests sent first and not measured (the first loads the model and fills its "
                          "caches)")),
    "max_tokens": IntParam(gettext_noop("max tokens per answer"), 1, 131_072, None,
        what=gettext_noop("the most tokens each answer may generate, reasoning included; the prompt's own "
                          "tokens (its prefill) do not count")),
}


METRICS = (
    ScoredMetric("Speed", "decode_tps_client", median_of("decode_tps_client")),
    ScoredMetric("Speed", "decode_tps_engine", median_of("decode_tps_engine")),
    ScoredMetric("Speed", "ttft_s", median_of("ttft_s")),
    # Pooled over the run: the engine's own counters where it has them (docs/metrics.md, Acceptance).
    ScoredMetric("Speed", "acceptance_rate", figure_of("acceptance_rate")),
    # Ollama's comes from its log lines (source "log"): one row for every engine, not a second one.
    ScoredMetric("Speed", "tokens_per_verification", figure_of("tokens_per_verification"), alert=False),
)




def _decode(summary: Summary) -> list[tuple[tuple[str, ...], float | None]]:
    return [((source,), median_of(f"decode_tps_{source}")(summary)) for source in ("client", "engine")]


EXPORTED = (
    Exported("sparkdash_decode_tokens_per_second", "Median decode tok/s of the latest speed run "
             "(source: client clock or the engine's own figure)", _decode, ("source",)),
    Exported.declared("sparkdash_ttft_seconds", "ttft_s", "the latest speed run, the median over requests",
                      one(median_of("ttft_s"))),
    Exported.declared("sparkdash_acceptance_rate", "acceptance_rate", "the latest speed run",
                      one(figure_of("acceptance_rate"))),
    Exported.declared("sparkdash_tokens_per_verification", "tokens_per_verification", "the latest speed run",
                      one(figure_of("tokens_per_verification"))),
)


def speed_job(ctx: JobContext) -> SpeedJob:
    """The speed job's requests: the config's fixed sampling, the run's max_tokens over it."""
    params = ctx.params
    sampling = dict(ctx.config.sampling) | {k: v for k, v in params.items() if k == "max_tokens"}
    return SpeedJob(ctx.config.model, params.get("reps", 3), params.get("warmup", 1), sampling)


async def run(ctx: JobContext) -> dict[str, Any]:
    return await run_speed(ctx.client, speed_job(ctx), ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    reps = Words.ngettext("%(count)s repetition", "%(count)s repetitions", **count(params.get("reps")))
    if not params.get("max_tokens"):
        return reps
    return Words.joined(", ", [reps, Words(gettext_noop("%(n)s max tokens"), n=params["max_tokens"])])


# The demo tour's answer length for both demo configs, so their comparison is like for like, and short
# enough that the dense 27B (7.9 tok/s without drafts) finishes its speed run in about half a minute.
TOUR_MAX_TOKENS = 48

JOB = JobSpec(
    summary_type=RequestFigures,
    describe=describe,
    name="speed", label=gettext_noop("Speed"), order=10, params=PARAMS, run=run,
    charted=("decode_tps_client", "decode_tps_engine", "ttft_s", "acceptance_rate"),
    benchmarks=(Benchmark("Speed", "speed"),), metrics=METRICS, exported=EXPORTED, sends_prompt_set=True,
    load="single",
    tour=("compared", {"reps": 1, "warmup": 0, "max_tokens": TOUR_MAX_TOKENS}),
)
