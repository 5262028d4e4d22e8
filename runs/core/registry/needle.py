"""The needle job: one fact hidden in a long text, sized by the engine's own tokenizer."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engines import kinds
from engines.words import Words, gettext_noop
from runs.core.jobs.needle import NeedleJob, ollama_calibrator, openai_tokenizer, run_needle
from runs.core.readings import Benchmark, Exported, Metric, field_of, one, share_of
from runs.core.registry.params import FractionListParam, IntListParam, IntParam, Param
from runs.core.registry.spec import JobContext, JobSpec

PARAMS: dict[str, Param] = {
    "lengths": IntListParam(gettext_noop("prompt lengths (tokens)"), 256, 1_048_576, (32_768, 65_536),
                            most=8),
    "depths": FractionListParam(gettext_noop("needle depths"), (0.1, 0.5, 0.9)),
    "answer_tokens": IntParam(gettext_noop("answer tokens"), 1, 1024, 32),
}
METRICS = (
    Metric("Needle", "found", gettext_noop("needles found"), "%", True, share_of("score", "total"), scale=100,
           out_of=field_of("total"), out_of_unit="needles"),
)
EXPORTED = (
    Exported("sparkdash_needle_found_ratio", "Share of needles found (0-1) in the latest needle run",
             one(share_of("score", "total"))),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    """Haystacks sized by the engine's own tokenizer (/tokenize, or calibrated where it has none)."""
    params, config = ctx.params, ctx.config
    kind = kinds.get(config.engine_kind)
    answer_tokens = config.answer_budget(params["answer_tokens"])  # room to reason first, if thinking
    extra: dict[str, Any] = {}
    if kind.needs_num_ctx:
        extra = {"options": {"num_ctx": max(params["lengths"]) + answer_tokens + 512}}
    if kind.tokenizer == "calibrated":
        tokenizer = ollama_calibrator(ctx.client, config.model, extra)
    else:
        tokenizer = openai_tokenizer(ctx.client, config.model)
    job = NeedleJob(config.model, tuple(params["lengths"]), tuple(params["depths"]), config.seed,
                    answer_tokens, extra=extra, thinking=config.sampling.get("thinking"),
                    reasoning_effort=config.sampling.get("reasoning_effort"))
    return await run_needle(ctx.client, job, ctx.progress, tokenizer)


def describe(params: Mapping[str, Any]) -> Words:
    lengths = ", ".join(str(n) for n in params.get("lengths", ()))
    depths = ", ".join(str(d) for d in params.get("depths", ()))
    return Words(gettext_noop("%(lengths)s tokens at depths %(depths)s"), lengths=lengths, depths=depths)


JOB = JobSpec(
    describe=describe,
    name="needle", label=gettext_noop("Needle in a haystack"),
    order=70, params=PARAMS, run=run, headline=METRICS[0],
    benchmarks=(Benchmark("Needle", "needle"),), metrics=METRICS, exported=EXPORTED,
)
