"""The concurrency sweep: c identical requests at once per level; the box's total throughput."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engines import kinds
from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.concurrency.loop import MAX_LEVEL, MAX_PROMPT_TOKENS, ConcurrencyJob, run_concurrency
from runs.core.jobs.concurrency.split import MAX_PROCESSES, SPLIT_FROM
from runs.core.jobs.params import IntListParam, IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec, count
from runs.core.jobs.summary import Figures, RunSummary, Spread
from runs.core.jobs.tokens import context_for, engine_tokenizer
from runs.core.readings import Exported, ScoredMetric, Summary, median_of

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "top_total_tps",
        gettext_noop("total at the highest level"),
        "tok/s",
        "a concurrency sweep's total tok/s at its highest load level",
        over_requests="value",
    ),
)


PARAMS: dict[str, Param] = {
    "levels": IntListParam(gettext_noop("concurrency levels"), 1, MAX_LEVEL, (1, 2, 4, 8, 16),
        what=gettext_noop("how many requests are in flight together, one level after another")),
    "answer_tokens": IntParam(gettext_noop("answer tokens"), 1, 32_768, 256,
        what=gettext_noop("tokens every answer generates (the end of sequence is ignored where the engine "
                          "allows it), so each stream does the same work")),
    "reps": IntParam(gettext_noop("repetitions"), 1, 20, 1,
        what=gettext_noop("rounds at each level; a round sends as many requests as the level")),
    "warmup": IntParam(gettext_noop("warm-up requests"), 0, 5, 1,
        what=gettext_noop("requests sent first and not measured")),
    "split_from": IntParam(gettext_noop("split from"), 1, MAX_LEVEL, SPLIT_FROM,
        what=gettext_noop("from this many requests at once, a level is sent by several measuring processes "
                          "under one start plan, so that one process's loop does not set the pace; a level "
                          "above 100 is always split (one process's connection pool holds 100)")),
    "prompt_tokens": IntParam(gettext_noop("prompt tokens"), 0, MAX_PROMPT_TOKENS, 0,
        what=gettext_noop("each prompt's length, counted by the engine's own tokenizer (a published "
                          "benchmark's pp); every request's prompt begins differently, so none is read "
                          "from another's cache. 0: the short prompt as it is")),
    "processes": IntParam(gettext_noop("measuring processes"), 0, MAX_PROCESSES, 0,
        what=gettext_noop("how many processes send a split level; 0: one per core of the worker beyond "
                          "the first")),
}


def _top_level_total_tps(summary: Summary) -> float | None:
    level = (summary.get("levels") or {}).get(str(summary.get("max_concurrency")))
    return median_of("total_tps")(level) if level else None


def _levels(summary: Summary) -> list[tuple[tuple[str, ...], float | None]]:
    levels = summary.get("levels") or {}
    return [((c,), median_of("total_tps")(levels[c])) for c in sorted(levels, key=int)]


EXPORTED = (
    Exported("sparkdash_concurrency_total_tokens_per_second", "Total generated tok/s of the box at each "
             "concurrency level of the latest concurrency sweep", _levels, ("concurrency",)),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    levels = tuple(params.get("levels", (1, 2, 4, 8, 16)))
    prompt_tokens, kind = params.get("prompt_tokens", 0), kinds.get(ctx.config.engine_kind)
    extra = context_for(kind.needs_num_ctx, prompt_tokens, params["answer_tokens"])
    job = ConcurrencyJob(ctx.config.model, levels, params["answer_tokens"], params["reps"],
                         dict(ctx.config.sampling), split_from=params.get("split_from", SPLIT_FROM),
                         processes=params.get("processes", 0), prompt_tokens=prompt_tokens, extra=extra)
    count = engine_tokenizer(ctx.client, kind.tokenizer, ctx.config.model, extra) if prompt_tokens else None
    return await run_concurrency(ctx.client, job, ctx.progress, ctx.pace, count)


def describe(params: Mapping[str, Any]) -> Words:
    levels = ", ".join(str(n) for n in params.get("levels", ()))
    bursts = Words.ngettext("%(count)s burst per level", "%(count)s bursts per level",
                            **count(params.get("reps")))
    answers = Words(gettext_noop("%(n)s-token answers"), n=params.get("answer_tokens"))
    at_once = Words(gettext_noop("%(levels)s requests at once"), levels=levels)
    parts = [at_once, answers, bursts]
    if params.get("prompt_tokens"):  # a sized prompt (a claim's pp) changes what each level measures
        parts.insert(1, Words(gettext_noop("%(n)s-token prompts"), n=params["prompt_tokens"]))
    return Words.joined(" · ", parts)


class Level(Figures):
    """One load level's figures: the box's total tok/s over its bursts, each answer's time to finish,
    and the concurrency the client achieved against the level's (None in runs before it was kept)."""

    total_tps: Spread | None = None
    finish_s: Spread | None = None
    prefill_tps: Spread | None = None
    achieved_concurrency: float | None = None


class ConcurrencySummary(RunSummary):
    """Per load level (requests at once, as a string key)."""

    levels: dict[str, Level] = {}
    max_concurrency: int | None = None


JOB = JobSpec(
    summary_type=ConcurrencySummary,
    describe=describe,
    name="concurrency", label=gettext_noop("Concurrency sweep"), order=40, params=PARAMS, run=run,
    headline=ScoredMetric("Concurrency sweep", "top_total_tps", _top_level_total_tps),
    exported=EXPORTED, compared=True,
    load="levels",
)
