"""The speed job: the prompt set, N repetitions, the config's fixed sampling."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engines.words import Words, gettext_noop
from runs.core.jobs.speed import SpeedJob, run_speed
from runs.core.readings import Benchmark, Exported, Metric, Summary, figure_of, median_of, one
from runs.core.registry.params import IntParam, Param
from runs.core.registry.spec import JobContext, JobSpec, count

PARAMS: dict[str, Param] = {
    "reps": IntParam(gettext_noop("repetitions"), 1, 50, 3),
    "warmup": IntParam(gettext_noop("warm-up requests"), 0, 5, 1),
    "max_tokens": IntParam(gettext_noop("max tokens per answer"), 1, 131_072, None),
}
def _log_rate(summary: Summary) -> float | None:
    rate = (summary.get("log_acceptance") or {}).get("acceptance_rate")
    return float(rate) if isinstance(rate, int | float) else None


METRICS = (
    Metric("Speed", "decode_tps_client", gettext_noop("decode (client)"), "tok/s", True,
           median_of("decode_tps_client")),
    Metric("Speed", "decode_tps_engine", gettext_noop("decode (engine)"), "tok/s", True,
           median_of("decode_tps_engine")),
    Metric("Speed", "ttft_s", gettext_noop("TTFT"), "s", False, median_of("ttft_s"), digits=3),
    # Pooled over the run: the engine's own counters where it has them (docs/metrics.md, Acceptance).
    Metric("Speed", "acceptance_rate", gettext_noop("acceptance rate"), "%", True,
           figure_of("acceptance_rate"), scale=100),
    Metric("Speed", "tokens_per_verification", gettext_noop("tokens per verification"), "tokens", True,
           figure_of("tokens_per_verification"), digits=2, alert=False),
    # Over the run's log lines (warm-up included): the only acceptance Ollama gives.
    Metric("Speed", "log_acceptance", gettext_noop("acceptance (engine log)"), "%", True, _log_rate,
           scale=100,
           alert=False),
)




def _decode(summary: Summary) -> list[tuple[tuple[str, ...], float | None]]:
    return [((source,), median_of(f"decode_tps_{source}")(summary)) for source in ("client", "engine")]


EXPORTED = (
    Exported("sparkdash_decode_tokens_per_second", "Median decode tok/s of the latest speed run "
             "(source: client clock or the engine's own figure)", _decode, ("source",)),
    Exported("sparkdash_ttft_seconds", "Median time to first token of the latest speed run",
             one(median_of("ttft_s"))),
    Exported("sparkdash_acceptance_rate", "Draft acceptance rate (0-1) of the latest speed run, pooled "
             "over the run: accepted / drafted tokens, by the engine's own counters where it has them",
             one(figure_of("acceptance_rate"))),
    Exported("sparkdash_tokens_per_verification", "Tokens per verification of the latest speed run, pooled "
             "over the run: (accepted draft tokens + verifications) / verifications",
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


JOB = JobSpec(
    describe=describe,
    name="speed", label=gettext_noop("Speed"), order=10, params=PARAMS, run=run, headline=METRICS[0],
    charted=("decode_tps_client", "decode_tps_engine", "ttft_s", "acceptance_rate"),
    benchmarks=(Benchmark("Speed", "speed"),), metrics=METRICS, exported=EXPORTED, sends_prompt_set=True,
)
