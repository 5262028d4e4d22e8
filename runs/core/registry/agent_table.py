"""The agent API-table task: a tool-calling agent reads a code base and fills a table, graded."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runs.core.jobs.agent_table import AgentTableJob, load_fixture, run_agent_table
from runs.core.readings import Benchmark, Exported, Metric, Summary, field_of, one
from runs.core.registry.params import FixtureParam, IntParam, Param
from runs.core.registry.spec import JobContext, JobSpec

PARAMS: dict[str, Param] = {
    "fixture": FixtureParam("agent fixture"),
    "max_steps": IntParam("step limit", 1, 200, 40),
    "answer_tokens": IntParam("answer tokens", 1, 32_768, 2048),
}


def _outcome_is(outcome: str) -> Callable[[Summary], bool | None]:
    return lambda summary: summary.get("outcome") == outcome if summary.get("outcome") else None


def _correct(summary: Summary) -> bool | None:
    if summary.get("score") is None or not summary.get("rows"):
        return None
    return summary["score"] == summary["rows"]


def _completed_task_s(summary: Summary) -> float | None:
    # Task time is the wall time of a whole task (docs/metrics.md), so loops and errors don't count.
    return summary.get("task_s") if summary.get("outcome") == "completed" else None


METRICS = (
    Metric("Agent table", "score", "table score", "rows", True, field_of("score"), digits=0,
           out_of=field_of("rows"), out_of_unit="rows"),
    Metric("Agent table", "task_s", "task time (completed runs)", "s", False, _completed_task_s),
    Metric("Agent table", "correct", "correct (full score)", "runs", True, _correct, count=True),
    Metric("Agent table", "completed", "completed", "runs", True, _outcome_is("completed"), count=True),
    Metric("Agent table", "loop", "loop", "runs", False, _outcome_is("loop"), count=True),
    Metric("Agent table", "error", "error", "runs", False, _outcome_is("error"), count=True),
)
EXPORTED = (
    Exported("sparkdash_agent_table_score", "Rows of the API table right in the latest agent-table run",
             one(field_of("score"))),
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


def describe(params: Mapping[str, Any]) -> str:
    return f"fixture {params.get('fixture')} · at most {params.get('max_steps')} steps"


JOB = JobSpec(
    describe=describe,
    name="agent-table", label="Agent API-table task", order=60, params=PARAMS, run=run,
    progress_unit="steps", headline=METRICS[0], benchmarks=(Benchmark("Agent table", "agent-table"),),
    metrics=METRICS, exported=EXPORTED, long_requests=True,
)
