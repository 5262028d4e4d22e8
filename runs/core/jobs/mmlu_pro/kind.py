"""MMLU-Pro through lm-evaluation-harness's own tasks, against the engine's OpenAI-compatible API."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.mmlu_pro.loop import SAMPLE_QUESTIONS, MmluProJob, run_mmlu_pro
from runs.core.jobs.params import DatasetParam, IntParam, Param
from runs.core.jobs.quality_data import dataset_of
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.summary import Breakdown, RunSummary, Share
from runs.core.readings import Benchmark, Exported, ScoredMetric, field_of, one

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "accuracy",
        gettext_noop("accuracy"),
        "%",
        "MMLU-Pro questions answered correctly / questions asked",
        scale=100,
        over_requests="value",
    ),
)


PARAMS: dict[str, Param] = {
    "dataset": DatasetParam(gettext_noop("dataset")),
    "limit": IntParam(gettext_noop("question limit"), 1, 20_000, None,
        what=gettext_noop("at most this many questions, spread evenly over the categories (a downloaded "
                          "dataset: this many per category); blank: all")),
    "num_fewshot": IntParam(gettext_noop("few-shot examples"), 0, 5, 5,
        what=gettext_noop("worked examples of the question's category put before it; at most as many as the "
                          "dataset has, and the run says so")),
    "max_tokens": IntParam(gettext_noop("max tokens per answer"), 16, 32_768, 2048,
        what=gettext_noop("the most tokens each answer may generate, reasoning included; an answer with no "
                          "letter by then counts as wrong")),
}
def answered(summary: Mapping[str, Any]) -> Any:
    """The questions (or tasks) the score is over: those answered (runs from before budget hits were
    counted: all)."""
    return summary.get("answered", summary.get("total"))


METRICS = (
    # Over the questions answered: a budget hit before answering is not a wrong answer.
    ScoredMetric("MMLU-Pro", "accuracy", field_of("accuracy"), out_of=answered,
           out_of_unit=gettext_noop("questions")),
)

EXPORTED = (
    Exported.declared("sparkdash_mmlu_pro_accuracy", "accuracy", "the latest MMLU-Pro run",
                      one(field_of("accuracy"))),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    dataset = dataset_of(params.get("dataset"), SAMPLE_QUESTIONS)
    limit, fewshot = params.get("limit"), params["num_fewshot"]
    sampling = ctx.config.sampling
    # With thinking on, the budget holds the reasoning as well as the answer.
    budget = ctx.config.answer_budget(params["max_tokens"])
    job = MmluProJob(ctx.config.model, dataset, limit, fewshot, budget, thinking=sampling.get("thinking"),
                     reasoning_effort=sampling.get("reasoning_effort"))
    return await run_mmlu_pro(ctx.client.base_url, ctx.config.api_key, job, ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    limit = (Words(gettext_noop("%(n)s questions"), n=params["limit"]) if params.get("limit")
             else Words(gettext_noop("all questions")))
    dataset = params.get("dataset") or Words(gettext_noop("TIGER-Lab/MMLU-Pro (hub)"))
    return Words.joined(" · ", [Words(gettext_noop("dataset %(dataset)s"), dataset=dataset), limit,
                                Words(gettext_noop("%(n)s-shot"), n=params.get("num_fewshot")),
                                Words(gettext_noop("%(n)s max tokens"), n=params.get("max_tokens"))])



class MmluProSummary(RunSummary):
    """Accuracy over the answered questions, the counts it is over, and each category's."""

    accuracy: float | None = None
    correct: int | None = None
    total: int | None = None
    answered: int | None = None
    by_category: dict[str, dict[str, Any]] | None = None

    def breakdowns(self) -> list[Breakdown]:
        """Each category's correct answers of those answered (a budget hit is not an answer)."""
        if not self.by_category:
            return []
        shares = [Share(name, entry.get("correct", 0), entry.get("total", 0) - entry.get("budget_hit", 0))
                  for name, entry in sorted(self.by_category.items())]
        return [Breakdown(gettext_noop("accuracy by category"), gettext_noop("questions"), shares)]


JOB = JobSpec(
    summary_type=MmluProSummary,
    describe=describe,
    name="mmlu-pro", label=gettext_noop("MMLU-Pro (lm-evaluation-harness)"), order=80, params=PARAMS, run=run,
    progress_unit=gettext_noop("questions"),
    benchmarks=(Benchmark("MMLU-Pro", "mmlu-pro"),),
    metrics=METRICS, exported=EXPORTED,
)
