"""The agent API-table task: a tool-calling agent reads a code base and fills a table, graded."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.agent_table import AgentTableJob, load_fixture, run_agent_table
from runs.core.jobs.agent_table.fixture import FIXTURES_DIR, fixture_dir
from runs.core.jobs.agent_table.grader import table_f1
from runs.core.jobs.params import FixtureParam, IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.summary import RunSummary
from runs.core.readings import Benchmark, Exported, ScoredMetric, Summary, field_of, one

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "f1",
        gettext_noop("table F1"),
        "%",
        "the agent table's correct rows weighed against every row it answered and every row of the truth",
        scale=100,
        over_requests="value",
    ),
    Metric(
        "score",
        gettext_noop("table score (correct rows)"),
        "rows",
        "the agent table's rows that match the truth",
        digits=0,
        over_requests="value",
    ),
    Metric(
        "precision",
        gettext_noop("precision (correct of rows answered)"),
        "%",
        "the agent table's correct rows / rows it answered",
        scale=100,
        over_requests="value",
    ),
    Metric(
        "exact",
        gettext_noop("exact (the truth table, nothing else)"),
        "runs",
        "an agent run whose table is the truth, row for row",
        over_requests="value",
        over_runs="count",
    ),
    Metric(
        "task_s",
        gettext_noop("task time (completed runs)"),
        "s",
        "an agent run's time from its first step to its answer, completed runs only",
        "lower",
        over_requests="value",
    ),
    Metric(
        "completed",
        gettext_noop("completed"),
        "runs",
        "an agent run that answered within its steps",
        over_requests="value",
        over_runs="count",
    ),
    Metric(
        "rescued",
        gettext_noop("rescued (answered after the watchdog)"),
        "runs",
        "an agent run that answered only after the read-loop watchdog stepped in",
        "lower",
        over_requests="value",
        over_runs="count",
    ),
    Metric(
        "loop",
        gettext_noop("loop"),
        "runs",
        "an agent run stopped in a read loop",
        "lower",
        over_requests="value",
        over_runs="count",
    ),
    Metric(
        "error",
        gettext_noop("error"),
        "runs",
        "an agent run that ended on an error",
        "lower",
        over_requests="value",
        over_runs="count",
    ),
)


PARAMS: dict[str, Param] = {
    "fixture": FixtureParam(gettext_noop("agent fixture"), FIXTURES_DIR, fixture_dir, load_fixture),
    "max_steps": IntParam(gettext_noop("step limit"), 1, 200, 40,
        what=gettext_noop("the most model requests before the task stops unfinished")),
    "answer_tokens": IntParam(gettext_noop("answer tokens"), 1, 32_768, 2048,
        what=gettext_noop("the most tokens each step's answer may generate, reasoning included")),
}


def _outcome_is(outcome: str) -> Callable[[Summary], bool | None]:
    return lambda summary: summary.get("outcome") == outcome if summary.get("outcome") else None


def _counts(summary: Summary) -> tuple[int, int, int] | None:
    """(correct rows, truth rows, rows answered) of a summary; None where one is missing."""
    score, rows, answered = summary.get("score"), summary.get("rows"), summary.get("answer_rows")
    if score is None or not rows or answered is None:
        return None
    return score, rows, answered


# Summaries stored before precision, F1 and exact existed hold the counts they come from.
def _f1(summary: Summary) -> float | None:
    if "f1" in summary:
        return summary["f1"]
    counts = _counts(summary)
    return table_f1(*counts) if counts else None


def _precision(summary: Summary) -> float | None:
    if "precision" in summary:
        return summary["precision"]
    counts = _counts(summary)
    return counts[0] / counts[2] if counts and counts[2] else None


def _exact(summary: Summary) -> bool | None:
    if "exact" in summary:
        return summary["exact"]
    counts = _counts(summary)
    return counts[0] == counts[1] == counts[2] if counts else None


def _completed_task_s(summary: Summary) -> float | None:
    # Task time is the wall time of a whole task (docs/metrics.md), so loops and errors don't count.
    return summary.get("task_s") if summary.get("outcome") == "completed" else None


# F1 first: it is the job's headline (sweep grid, scorecard, compare); docs/metrics.md, "table F1".
METRICS = (
    ScoredMetric("Agent table", "f1", _f1),
    ScoredMetric("Agent table", "score", field_of("score"), out_of=field_of("rows"),
           out_of_unit=gettext_noop("rows"),
           alert=False),
    ScoredMetric("Agent table", "precision", _precision, alert=False),
    ScoredMetric("Agent table", "exact", _exact),
    ScoredMetric("Agent table", "task_s", _completed_task_s),
    ScoredMetric("Agent table", "completed", _outcome_is("completed")),
    ScoredMetric("Agent table", "rescued", _outcome_is("rescued")),
    ScoredMetric("Agent table", "loop", _outcome_is("loop")),
    ScoredMetric("Agent table", "error", _outcome_is("error")),
)
EXPORTED = (
    Exported("sparkdash_agent_table_score", "Rows of the API table right in the latest agent-table run",
             one(field_of("score"))),
    Exported.declared("sparkdash_agent_table_f1", "f1", "the latest agent-table run", one(_f1)),
    Exported("sparkdash_agent_table_rows", "Rows of the API table's truth in the latest agent-table run",
             one(field_of("rows"))),
    Exported("sparkdash_agent_table_task_seconds", "Wall time of the latest agent-table run, when it "
             "completed", one(_completed_task_s)),
)


async def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    job = AgentTableJob(ctx.config.model, load_fixture(params["fixture"]).root, params["max_steps"],
                        params["answer_tokens"], dict(ctx.config.sampling))
    return await run_agent_table(ctx.client, job, ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    return Words.joined(" · ", [Words(gettext_noop("fixture %(fixture)s"), fixture=params.get("fixture")),
                                Words(gettext_noop("at most %(n)s steps"), n=params.get("max_steps"))])



class AgentTableSummary(RunSummary):
    """The table's F1, precision and correct rows, and how the agent's run ended."""

    f1: float | None = None
    precision: float | None = None
    score: int | None = None
    rows: int | None = None
    outcome: str | None = None


JOB = JobSpec(
    summary_type=AgentTableSummary,
    describe=describe,
    name="agent-table", label=gettext_noop("Agent API-table task"), order=60, params=PARAMS, run=run,
    progress_unit=gettext_noop("steps"),
    benchmarks=(Benchmark("Agent table", "agent-table"),),
    metrics=METRICS, exported=EXPORTED, long_requests=True,
    tour=("warnings", {}),  # the read-loop warning
)
