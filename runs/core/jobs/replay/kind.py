"""The replay job: chat requests recorded from a real agent session, sent again in order."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measure import catalog
from measure.catalog import Metric
from measure.words import Words, gettext_noop
from runs.core.jobs.params import IntParam, Param, RequestsParam
from runs.core.jobs.replay.loop import SAMPLE_REQUESTS, ReplayJob, parse_jsonl, run_replay
from runs.core.jobs.spec import JobContext, JobSpec, count
from runs.core.jobs.summary import RunSummary, Spread
from runs.core.readings import ScoredMetric, median_of

# The metrics this kind declares (measure.catalog): its figures' labels, units and definitions.
catalog.declare_all(
    Metric(
        "wall_s",
        gettext_noop("wall time per pass"),
        "s",
        "one replay pass of the recorded session, start to last answer",
        "lower",
    ),
)


PARAMS: dict[str, Param] = {
    "requests": RequestsParam(gettext_noop("recorded requests (.jsonl)"), SAMPLE_REQUESTS, parse_jsonl),
    "reps": IntParam(gettext_noop("repetitions"), 1, 50, 3,
        what=gettext_noop("times the whole file is sent again, in order")),
    "warmup": IntParam(gettext_noop("warm-up requests"), 0, 5, 1,
        what=gettext_noop("requests from the file's start sent first and not measured")),
}


async def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    job = ReplayJob(params["requests"], params["reps"], ctx.config.model, params.get("warmup", 1))
    return await run_replay(ctx.client, job, ctx.progress)


def describe(params: Mapping[str, Any]) -> Words:
    requests = params.get("requests")
    passes = Words.ngettext("%(count)s pass", "%(count)s passes", **count(params.get("reps")))
    return Words(gettext_noop("%(requests)s recorded requests × %(passes)s"),  # noqa: RUF001 (the sign is meant)
                 requests=len(requests) if isinstance(requests, list) else requests, passes=passes)



class ReplaySummary(RunSummary):
    """The recorded session's wall time over the passes."""

    wall_s: Spread | None = None


JOB = JobSpec(
    summary_type=ReplaySummary,
    describe=describe,
    name="replay", label=gettext_noop("Replay"), order=30, params=PARAMS, run=run,
    headline=ScoredMetric("Replay", "wall_s", median_of("wall_s")),
)
