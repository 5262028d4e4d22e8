"""HumanEval+ / MBPP+ pass@1 through EvalPlus, greedy, against the engine's OpenAI-compatible API."""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.mmlu_pro.kind import answered
from runs.core.jobs.params import ChoiceParam, DatasetParam, IntParam, Param
from runs.core.jobs.quality_data import dataset_of, evalplus_download
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.summary import RunSummary
from runs.core.readings import Benchmark, Exported, ScoredMetric, Summary, field_of

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "pass_at_1_plus",
        gettext_noop("pass@1 (plus tests)"),
        "%",
        "EvalPlus tasks whose one answer passes the base and the extended tests / tasks",
        scale=100,
        over_requests="value",
    ),
    Metric(
        "pass_at_1_base",
        gettext_noop("pass@1 (base tests)"),
        "%",
        "EvalPlus tasks whose one answer passes the base tests / tasks",
        scale=100,
        over_requests="value",
    ),
)


SAMPLES = Path(__file__).resolve().parent / "fixtures"  # the shipped subsets, <suite>_plus.jsonl

PARAMS: dict[str, Param] = {
    "suite": ChoiceParam(gettext_noop("suite"), (("humaneval", "HumanEval+"), ("mbpp", "MBPP+")),
        what=gettext_noop("the problem set: HumanEval+ (164 functions) or MBPP+ (378 short programs)")),
    "dataset": DatasetParam(gettext_noop("dataset")),
    "limit": IntParam(gettext_noop("question limit"), 1, 2_000, None,
        what=gettext_noop("the first this many problems of the set; blank: all")),
    "max_tokens": IntParam(gettext_noop("max tokens per answer"), 16, 32_768, 768,
        what=gettext_noop("the most tokens each program may generate, reasoning included; one cut there "
                          "usually fails its tests")),
}


def _pass_at_1(benchmark: str) -> tuple[ScoredMetric, ...]:
    """EvalPlus's two scores: pass@1 on the plus (extended) tests and on the base tests."""
    return tuple(ScoredMetric(benchmark, f"pass_at_1_{tests}", field_of(f"pass_at_1_{tests}"),
                              out_of=answered, out_of_unit=gettext_noop("tasks"))
                 for tests in ("plus", "base"))


METRICS = (*_pass_at_1("HumanEval+"), *_pass_at_1("MBPP+"))


def _exported_pass_at_1(summary: Summary) -> list[tuple[tuple[str, ...], float | None]]:
    suite = str(summary.get("dataset") or "")
    return [((suite, tests), summary.get(f"pass_at_1_{tests}")) for tests in ("plus", "base")]


EXPORTED = (
    Exported("sparkdash_evalplus_pass_at_1", "EvalPlus pass@1 (0-1) of the latest run per suite, on the "
             "plus (extended) or base tests", _exported_pass_at_1, ("suite", "tests")),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    # EvalPlus (and the openai SDK) take seconds to import: only a worker that runs the job pays.
    from runs.core.jobs.evalplus.loop import EvalPlusJob, run_evalplus

    params = ctx.params
    suite = params["suite"]
    dataset = dataset_of(params.get("dataset"), SAMPLES / f"{suite}_plus.jsonl")
    if dataset is None:
        dataset = await asyncio.to_thread(evalplus_download, suite)
    sampling = ctx.config.sampling
    # With thinking on, the budget holds the reasoning as well as the answer.
    job = EvalPlusJob(ctx.config.model, suite, dataset, params.get("limit"),
                      ctx.config.answer_budget(params["max_tokens"]), thinking=sampling.get("thinking"),
                      reasoning_effort=sampling.get("reasoning_effort"))
    return await run_evalplus(ctx.client.base_url, ctx.config.api_key, job, ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    suite = Words("MBPP+" if params.get("suite") == "mbpp" else "HumanEval+")
    limit = (Words(gettext_noop("%(n)s problems"), n=params["limit"]) if params.get("limit")
             else Words(gettext_noop("all problems")))
    dataset = params.get("dataset") or Words(gettext_noop("EvalPlus release"))
    return Words.joined(" · ", [suite, Words(gettext_noop("dataset %(dataset)s"), dataset=dataset), limit,
                                Words(gettext_noop("%(n)s max tokens"), n=params.get("max_tokens"))])



class EvalPlusSummary(RunSummary):
    """pass@1 on the base and on the plus tests, over the tasks answered."""

    pass_at_1_plus: float | None = None
    pass_at_1_base: float | None = None
    total: int | None = None
    answered: int | None = None


JOB = JobSpec(
    summary_type=EvalPlusSummary,
    describe=describe,
    name="evalplus", label=gettext_noop("HumanEval+ / MBPP+ (EvalPlus)"), order=90, params=PARAMS, run=run,
    progress_unit=gettext_noop("problems"),
    # the headline, METRICS[0], reads pass_at_1_plus of either suite
    benchmarks=(Benchmark("HumanEval+", "evalplus", "humaneval"), Benchmark("MBPP+", "evalplus", "mbpp")),
    metrics=METRICS, exported=EXPORTED,
)
