"""The lookahead sweep: the speed job's requests replayed at several lookahead lengths.

The engine must be set to each length before its requests: llama-server, vLLM and SGLang by a
relaunch (llama-server ignores per-request lengths), Ollama by a Modelfile alias. The caller
supplies that as `at_lookahead`, an async context manager factory yielding a client and model.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any

from engines.clients.base import EngineClient
from runs.core.jobs.speed import RequestCount, RunProgress, SpeedJob, measure_prompts
from runs.core.stats import summarize_rows

AtLookahead = Callable[[int], AbstractAsyncContextManager[tuple[EngineClient, str]]]
SWEEP_METRICS = ("decode_tps_client", "decode_tps_engine", "acceptance_rate", "tokens_per_verification")


@dataclass(frozen=True)
class LookaheadJob:
    """The lengths to try and the speed job to run at each."""

    speed: SpeedJob
    lengths: Sequence[int] = (0, 2, 4, 8, 12)


async def run_lookahead(
    at_lookahead: AtLookahead, job: LookaheadJob, progress: RunProgress
) -> dict[str, Any]:
    """Measure the prompt set at each lookahead length; summarize per length and output type."""
    tally = RequestCount(len(job.lengths) * job.speed.reps * len(job.speed.prompts))
    await progress.on_start(tally.total)
    rows: list[dict[str, Any]] = []
    for length in job.lengths:
        async with at_lookahead(length) as (client, model):
            speed = replace(job.speed, model=model)
            rows += await measure_prompts(client, speed, progress, tally, lookahead=length)
    return summarize_lookahead(rows, job.lengths)


def summarize_lookahead(rows: Sequence[dict[str, Any]], lengths: Sequence[int]) -> dict[str, Any]:
    """{"lengths": {k: {"all": spreads, output_type: spreads}}, "best": the fastest length}."""
    per_length: dict[str, Any] = {}
    for length in lengths:
        at = [r for r in rows if r["lookahead"] == length]
        figures: dict[str, Any] = {"all": summarize_rows(at, SWEEP_METRICS)}
        for output_type in sorted({r["output_type"] for r in at}):
            subset = [r for r in at if r["output_type"] == output_type]
            figures[output_type] = summarize_rows(subset, SWEEP_METRICS)
        per_length[str(length)] = figures
    return {"lengths": per_length, "best_lookahead": _fastest(per_length), "requests": len(rows)}


def _fastest(per_length: dict[str, Any]) -> int | None:
    speeds = {k: v["all"]["decode_tps_client"] for k, v in per_length.items()}
    speeds = {k: v for k, v in speeds.items() if v}
    if not speeds:
        return None
    return int(max(speeds, key=lambda k: speeds[k]["median"]))
