"""The bandwidth job: the machine's achievable memory bandwidth (runs.core.jobs.bandwidth.loop), stored on it.

No engine is started or asked: the job copies one large buffer on the GPU where one is found,
else on the CPU, and a succeeded run sets the machine's measured bandwidth, which the roofline
then holds every run against next to the nominal figure.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from measure.words import Words, gettext_noop
from runs.core.jobs.bandwidth.loop import MIB, measure_bandwidth
from runs.core.jobs.params import IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec, count
from runs.core.jobs.summary import RunSummary
from runs.core.readings import ScoredMetric, field_of

PARAMS: dict[str, Param] = {
    "buffer_mib": IntParam(gettext_noop("buffer (MiB)"), 16, 8192, 256,
        what=gettext_noop("size of the buffer copied; well above the caches, so memory is what is timed")),
    "passes": IntParam(gettext_noop("timed passes"), 1, 50, 5,
        what=gettext_noop("timed copies after an untimed one; the figure is the best pass")),
}


async def run(ctx: JobContext) -> dict[str, Any]:
    """The best of the timed copies; its share of the machine's nominal bandwidth."""
    size, passes = ctx.params["buffer_mib"] * MIB, ctx.params["passes"]
    await ctx.progress.on_start(passes)
    result = await asyncio.to_thread(measure_bandwidth, size, passes)
    for i, gbps in enumerate(result.per_pass_gbps, 1):  # one point per pass for the run page's chart
        await ctx.progress.on_sample("request", {"pass": i, "gbps": gbps})
    nominal = ctx.config.machine_bandwidth_gbps
    return {
        "bandwidth_gbps": result.gbps, "method": result.method, "passes": result.passes,
        "bytes": result.bytes, "bytes_moved": result.bytes_moved, "per_pass_gbps": list(result.per_pass_gbps),
        "nominal_gbps": nominal, "share_of_nominal": result.gbps / nominal if nominal else None,
    }


def machine_fields(summary: Mapping[str, Any], run_id: int, at: datetime) -> dict[str, Any]:
    """What a succeeded run sets on its machine."""
    return {"measured_bandwidth_gbps": summary["bandwidth_gbps"], "bandwidth_method": summary["method"],
            "bandwidth_measured_at": at, "bandwidth_run_id": run_id}


def describe(params: Mapping[str, Any]) -> Words:
    passes = Words.ngettext("%(count)s pass", "%(count)s passes", **count(params.get("passes")))
    return Words.joined(" · ", [Words(gettext_noop("%(n)s MiB buffer"), n=params.get("buffer_mib")), passes])



class BandwidthSummary(RunSummary):
    """The machine's measured memory bandwidth."""

    bandwidth_gbps: float | None = None


JOB = JobSpec(
    summary_type=BandwidthSummary,
    describe=describe,
    name="bandwidth", label=gettext_noop("Memory bandwidth"),
    order=95, params=PARAMS, run=run, progress_unit=gettext_noop("passes"),
    headline=ScoredMetric("Memory bandwidth", "bandwidth_gbps", field_of("bandwidth_gbps")),
    engine="none", machine_fields=machine_fields,
)
