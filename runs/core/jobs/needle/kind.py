"""The needle job: one fact hidden in a long text, sized by the engine's own tokenizer."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engines import kinds
from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.needle.loop import NeedleJob, run_needle
from runs.core.jobs.params import FractionListParam, IntListParam, IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.summary import Breakdown, RunSummary, Share
from runs.core.jobs.tokens import context_for, engine_tokenizer
from runs.core.readings import Benchmark, Exported, ScoredMetric, field_of, one, share_of

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "found",
        gettext_noop("needles found"),
        "%",
        "needles the answer names / needles hidden, over every depth and length",
        scale=100,
        over_requests="value",
    ),
)


PARAMS: dict[str, Param] = {
    "lengths": IntListParam(
        gettext_noop("prompt lengths (tokens)"), 256, 1_048_576, (32_768, 65_536), most=8,
        what=gettext_noop("sizes of the text the fact is hidden in, counted by the engine's own tokenizer; "
                          "each must fit the config's context")),
    "depths": FractionListParam(gettext_noop("needle depths"), (0.1, 0.5, 0.9),
        what=gettext_noop("where the fact sits in each text, as a fraction of the way through it")),
    "answer_tokens": IntParam(gettext_noop("answer tokens"), 1, 1024, 32,
        what=gettext_noop("the most tokens each answer may generate (the fact asked for is short)")),
}
METRICS = (
    ScoredMetric("Needle", "found", share_of("score", "total"), out_of=field_of("total"),
           out_of_unit=gettext_noop("needles")),
)
EXPORTED = (
    Exported.declared("sparkdash_needle_found_ratio", "found", "the latest needle run",
                      one(share_of("score", "total"))),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    """Haystacks sized by the engine's own tokenizer (/tokenize, or calibrated where it has none)."""
    params, config = ctx.params, ctx.config
    kind = kinds.get(config.engine_kind)
    answer_tokens = config.answer_budget(params["answer_tokens"])  # room to reason first, if thinking
    extra = context_for(kind.needs_num_ctx, max(params["lengths"]), answer_tokens)
    tokenizer = engine_tokenizer(ctx.client, kind.tokenizer, config.model, extra)
    job = NeedleJob(config.model, tuple(params["lengths"]), tuple(params["depths"]), config.seed,
                    answer_tokens, extra=extra, thinking=config.sampling.get("thinking"),
                    reasoning_effort=config.sampling.get("reasoning_effort"))
    return await run_needle(ctx.client, job, ctx.progress, tokenizer)


def describe(params: Mapping[str, Any]) -> Words:
    lengths = ", ".join(str(n) for n in params.get("lengths", ()))
    depths = ", ".join(str(d) for d in params.get("depths", ()))
    return Words(gettext_noop("%(lengths)s tokens at depths %(depths)s"), lengths=lengths, depths=depths)



class NeedleSummary(RunSummary):
    """Needles found of needles hidden, overall and by context length and by depth."""

    score: int | None = None
    total: int | None = None
    by_length: dict[str, dict[str, int]] | None = None
    by_depth: dict[str, dict[str, int]] | None = None

    def breakdowns(self) -> list[Breakdown]:
        """Needles found of hidden, by haystack length and by depth, in numeric order."""
        parts = ((gettext_noop("needles found by haystack length (tokens)"), self.by_length),
                 (gettext_noop("needles found by depth (0: the start, 1: the end)"), self.by_depth))
        return [Breakdown(title, gettext_noop("needles"), [
            Share(name, tally.get("found", 0), tally.get("total", 0))
            for name, tally in sorted(tallies.items(), key=lambda item: float(item[0]))
        ]) for title, tallies in parts if tallies]


JOB = JobSpec(
    summary_type=NeedleSummary,
    describe=describe,
    name="needle", label=gettext_noop("Needle in a haystack"),
    order=70, params=PARAMS, run=run,
    benchmarks=(Benchmark("Needle", "needle"),), metrics=METRICS, exported=EXPORTED,
)
