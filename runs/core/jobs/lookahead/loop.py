"""The lookahead sweep: the speed job's requests replayed at several lookahead lengths.

The engine must be set to each length before its requests: llama-server, vLLM and SGLang by a
relaunch (llama-server ignores per-request lengths), Ollama by a Modelfile alias. The caller
supplies that as `at_lookahead`, an async context manager factory yielding a client and model.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engines.clients.base import EngineClient, EngineError
from engines.clients.counters import spec_since
from measure.stats import summarize_rows
from runs.core.jobs.progress import RunProgress
from runs.core.jobs.spec import AtLookahead
from runs.core.jobs.speed.loop import RequestCount, SpeedJob, SummarySoFar, measure_prompts
from runs.core.outcomes import Failures, count_outcomes, succeeded
from runs.core.request_figures import acceptance_by_position, engine_pooled, pooled_drafting

SWEEP_METRICS = ("decode_tps_client", "decode_tps_engine")  # spreads; acceptance is pooled per length


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
    counted: dict[str, dict[str, Any] | None] = {}
    progress = SummarySoFar(progress, lambda so_far: summarize_lookahead(so_far, job.lengths, counted, False))
    for length in job.lengths:
        async with at_lookahead(length) as (client, model):
            before = await _snapshot(client)
            speed = replace(job.speed, model=model)
            rows += await measure_prompts(client, speed, progress, tally, lookahead=length)
            spec = await spec_since(client, before)
            counted[str(length)] = spec.summary() if spec else None
    Failures.check_any_succeeded(rows)
    return summarize_lookahead(rows, job.lengths, counted)


async def _snapshot(client: EngineClient) -> str | None:
    try:
        return await client.counters_text()
    except EngineError:
        return None  # no counters: the length's figures come from the replies alone


def summarize_lookahead(
    all_rows: Sequence[dict[str, Any]], lengths: Sequence[int],
    counted: dict[str, dict[str, Any] | None] | None = None, intervals: bool = True,
) -> dict[str, Any]:
    """{"lengths": {k: {"all": spreads, output_type: spreads}}, "spec_by_length": {k: counters},
    "best_lookahead": the fastest length}.

    Acceptance and tokens per verification are pooled: "all" from the length's counters where the
    engine has them, else (and per output type) summed from the requests (runs.core.request_figures).
    Each length's and output type's spreads carry "acceptance_by_position" where the engine's
    per-request counts have it ("all" falls back on the length's counters); "spec_by_length" is
    each length's /metrics delta, warm-up included (None: not exposed, or no drafting). Figures
    are over the requests that succeeded; "outcomes" counts all (runs/core/outcomes.py). Without
    `intervals` the spreads have none (the summary so far of a run still going).
    """
    rows = succeeded(all_rows)
    per_length: dict[str, Any] = {}
    for length in lengths:
        at = [r for r in rows if r["lookahead"] == length]
        figures: dict[str, Any] = {"all": _figures(at, intervals)}
        for output_type in sorted({r["output_type"] for r in at}):
            figures[output_type] = _figures([r for r in at if r["output_type"] == output_type], intervals)
        spec = (counted or {}).get(str(length))
        figures["all"] |= engine_pooled(spec)  # the headline from the engine's counters where it has them
        if figures["all"]["acceptance_by_position"] is None and spec:
            figures["all"]["acceptance_by_position"] = spec["acceptance_by_position"]
        per_length[str(length)] = figures
    return {
        "lengths": per_length, "spec_by_length": {str(k): (counted or {}).get(str(k)) for k in lengths},
        "best_lookahead": _fastest(per_length), "requests": len(rows),
        "outcomes": count_outcomes(all_rows),
    }  # fmt: skip


def _figures(rows: Sequence[Mapping[str, Any]], intervals: bool = True) -> dict[str, Any]:
    return summarize_rows(rows, SWEEP_METRICS, intervals) | pooled_drafting(rows, intervals) | {
        "acceptance_by_position": acceptance_by_position(rows)
    }


def _fastest(per_length: dict[str, Any]) -> int | None:
    speeds = {k: v["all"]["decode_tps_client"] for k, v in per_length.items()}
    speeds = {k: v for k, v in speeds.items() if v}
    if not speeds:
        return None
    return int(max(speeds, key=lambda k: speeds[k]["median"]))
