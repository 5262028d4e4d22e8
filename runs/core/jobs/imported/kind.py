"""Imported runs: a load level of another tool's result file (runs.core.imports), kept as a run.

Not started from a form, the bench command or a schedule (`startable` False): `manage.py
importruns` and the import page make them. Their figures sit under SparkDash's own metric keys,
so the runs list, compare, scorecards and the results table read them as they read a speed run's;
the run page shows, next to each figure, where the tool's definition differs.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from measure.words import Words, gettext_noop
from runs.core.imports import TOOLS
from runs.core.jobs.params import ChoiceParam, IntParam, Param
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.jobs.summary import Imported
from runs.core.readings import Benchmark, ScoredMetric, Summary, median_of

PARAMS: dict[str, Param] = {
    "tool": ChoiceParam(gettext_noop("tool"), tuple(TOOLS.items()),
        what=gettext_noop("the tool whose result file this run was read from")),
    "concurrency": IntParam(gettext_noop("concurrency"), 1, 10_000, None,
        what=gettext_noop("requests the tool kept in flight at once, where its file says")),
}

FIGURES = (("decode_tps_client", median_of("decode_tps_client")), ("ttft_s", median_of("ttft_s")),
           ("tpot_s", median_of("tpot_s")), ("itl_s", median_of("itl_s")),
           ("decode_tps_engine", median_of("decode_tps_engine")), ("prefill_tps", median_of("prefill_tps")))


async def run(ctx: JobContext) -> dict[str, Any]:
    raise ValueError("an imported run is read from a file (manage.py importruns), not run")


def describe(params: Mapping[str, Any]) -> Words:
    name = str(params.get("tool") or "")
    tool = Words(TOOLS.get(name, name))
    if not params.get("concurrency"):
        return tool
    return Words.joined(", ", [tool, Words(gettext_noop("concurrency %(n)s"), n=params["concurrency"])])


def _one_stream_of(tool: str) -> Callable[[Summary], bool]:
    """A tool's single-stream levels: compare and scorecards set them beside SparkDash's speed runs,
    like with like; other load levels are compared in the cross-tool view, level by level."""
    return lambda summary: summary.get("tool") == tool and summary.get("concurrency") in (1, None)


# Benchmark names are English in exports and translated where shown.
BENCHMARKS = tuple(Benchmark(name, "imported", where=_one_stream_of(tool)) for tool, name in (
    ("vllm-bench", gettext_noop("vLLM bench serve, one stream")),
    ("sglang-bench", gettext_noop("SGLang bench_serving, one stream")),
    ("guidellm", gettext_noop("GuideLLM, one stream")), ("aiperf", gettext_noop("AIPerf, one stream")),
    ("llama-bench", gettext_noop("llama-bench (in-process)")),
    ("llama-benchy", gettext_noop("llama-benchy, one stream")),
))
# One row set per tool: a ScoredMetric names its benchmark.
METRICS = tuple(ScoredMetric(b.name, key, read, alert=key != "itl_s")
                for b in BENCHMARKS for key, read in FIGURES)

JOB = JobSpec(
    summary_type=Imported, describe=describe, startable=False, engine="none",
    name="imported", label=gettext_noop("Imported results"), order=200, params=PARAMS, run=run,
    benchmarks=BENCHMARKS, metrics=METRICS,
)
