"""The speed job: the prompt set, N repetitions, fixed sampling; per-request figures and a summary."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engines.clients.base import EngineClient, GenerationRequest
from measure.stats import summarize_rows
from runs.core.jobs.progress import RunProgress
from runs.core.jobs.prompts import SPEED_PROMPTS, Prompt, prompt_set_id
from runs.core.outcomes import Failures, count_outcomes, succeeded
from runs.core.request_figures import (
    REQUEST_METRICS,
    acceptance_by_position,
    pooled_decode,
    pooled_drafting,
    request_metrics,
    sources,
)


@dataclass(frozen=True)
class SpeedJob:
    """What a speed run sends: the model, fixed sampling, repetitions and the prompt set."""

    model: str
    reps: int = 3
    warmup: int = 1
    sampling: dict[str, Any] = field(default_factory=dict)
    prompts: Sequence[Prompt] = SPEED_PROMPTS

    def request(self, prompt: Prompt) -> GenerationRequest:
        s = self.sampling
        return GenerationRequest(
            model=self.model,
            messages=prompt.messages(),
            max_tokens=s.get("max_tokens", 256),
            temperature=s.get("temperature", 0.0),
            top_p=s.get("top_p"),
            top_k=s.get("top_k"),
            seed=s.get("seed", 0),
            thinking=s.get("thinking"),
            reasoning_effort=s.get("reasoning_effort"),
        )


async def run_speed(client: EngineClient, job: SpeedJob, progress: RunProgress) -> dict[str, Any]:
    """Send every prompt `reps` times (after unrecorded warm-up requests) and summarize.

    A failed request is a row with its reason (runs/core/outcomes.py); raises EngineError naming
    the request when the run must stop (engine unreachable, failures in a row, none succeeded);
    samples reported before it stand.
    """
    total = job.reps * len(job.prompts)
    await progress.on_start(total)
    rows = await measure_prompts(client, job, SummarySoFar(progress), RequestCount(total))
    Failures.check_any_succeeded(rows)
    # Recorded so that a comparison can tell whether two runs sent the same prompts.
    return summarize_speed(rows) | {"prompt_set": prompt_set_id(job.prompts)}


class SummarySoFar:
    """Passes a run's progress on and, before each request's sample, the summary of the requests
    so far (`summarize(rows)`, by default the speed job's without intervals): the run page's
    summary table fills as the run goes, then the final one replaces it."""

    def __init__(
        self, progress: RunProgress, summarize: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
    ) -> None:
        self.progress = progress
        self.summarize = summarize or (lambda rows: summarize_speed(rows, intervals=False))
        self.rows: list[dict[str, Any]] = []

    async def on_start(self, total: int) -> None:
        await self.progress.on_start(total)

    async def on_sample(self, sample_kind: str, values: dict[str, Any]) -> None:
        if sample_kind == "request":
            self.rows.append(values)
            await self.progress.on_summary_so_far(self.summarize(self.rows))
        await self.progress.on_sample(sample_kind, values)

    async def on_summary_so_far(self, summary: dict[str, Any]) -> None:
        await self.progress.on_summary_so_far(summary)


@dataclass
class RequestCount:
    """How many requests a run sends in all, how many it has sent (for error messages), and its
    rule for failed ones."""

    total: int
    done: int = 0
    failures: Failures = field(default_factory=Failures)


async def measure_prompts(
    client: EngineClient, job: SpeedJob, progress: RunProgress, tally: RequestCount, **label: Any
) -> list[dict[str, Any]]:
    """The warm-up, then every prompt `reps` times; each row is reported as a "request" sample."""
    for _ in range(job.warmup):  # unrecorded, but a failed one counts towards failures in a row
        await _send(client, job, job.prompts[0], "warm-up request", tally.failures)
    rows: list[dict[str, Any]] = []
    for rep in range(job.reps):
        for prompt in job.prompts:
            tally.done += 1
            where = f"request {tally.done} of {tally.total} ({prompt.name}, repetition {rep + 1})"
            row = await _send(client, job, prompt, where, tally.failures)
            row |= {"prompt": prompt.name, "output_type": prompt.output_type, "rep": rep, **label}
            rows.append(row)
            await progress.on_sample("request", row)
    return rows


async def _send(
    client: EngineClient, job: SpeedJob, prompt: Prompt, where: str, failures: Failures
) -> dict[str, Any]:
    gen = await failures.send(client, job.request(prompt), where)
    return gen if isinstance(gen, dict) else request_metrics(gen)


def summarize_speed(all_rows: Sequence[dict[str, Any]], intervals: bool = True) -> dict[str, Any]:
    """Each metric as median/min/max/n over the requests that succeeded (acceptance and tokens per
    verification pooled over them), decode speed and acceptance per output type, and the outcomes
    of all of them (runs/core/outcomes.py); without the medians' intervals if not `intervals`."""
    rows = succeeded(all_rows)
    summary: dict[str, Any] = summarize_rows(rows, REQUEST_METRICS, intervals)
    summary |= pooled_drafting(rows, intervals)
    summary["requests"] = len(rows)
    summary["reasoning_tokens_sources"] = sources(rows, "reasoning_tokens_source")
    summary["output_tokens_sources"] = sources(rows, "output_tokens_source")
    summary["decode_tps_pooled"] = pooled_decode(rows)
    summary["outcomes"] = count_outcomes(all_rows)
    by_type: dict[str, Any] = {}
    for output_type in sorted({r["output_type"] for r in rows}):
        subset = [r for r in rows if r["output_type"] == output_type]
        decode = summarize_rows(subset, ("decode_tps_client",), intervals)
        by_type[output_type] = decode | pooled_drafting(subset, intervals) | {
            "acceptance_by_position": acceptance_by_position(subset)
        }
    summary["by_output_type"] = by_type
    summary["acceptance_by_position"] = acceptance_by_position(rows)
    summary["cross_check"] = cross_check(summary)
    summary["ttft_check"] = ttft_check(summary)
    return summary


CROSS_CHECK_TOLERANCE = 0.05
TTFT_CHECK_TOLERANCE = 0.10


def cross_check(summary: dict[str, Any], tolerance: float = CROSS_CHECK_TOLERANCE) -> dict[str, Any] | None:
    """Compare the client's median decode speed with the engine's own; flag a gap over `tolerance`.

    None when the engine reports no decode speed of its own.
    """
    keys = ("decode_tps_client", "decode_tps_engine")
    return _agreement(summary, keys, ("client_tps", "engine_tps"), tolerance)


def ttft_check(summary: dict[str, Any], tolerance: float = TTFT_CHECK_TOLERANCE) -> dict[str, Any] | None:
    """Compare the client's median time to first token with the engine's own; flag a gap over `tolerance`.

    The client's figure runs from its request going out to the first generated token, reasoning
    included; the engine's (vLLM's time_to_first_token_seconds) from the request's arrival in the
    engine to its first token.
    None when the engine reports no time to first token of its own.
    """
    return _agreement(summary, ("ttft_s", "ttft_engine_s"), ("client_s", "engine_s"), tolerance)


def _agreement(
    summary: dict[str, Any], keys: tuple[str, str], names: tuple[str, str], tolerance: float
) -> dict[str, Any] | None:
    client, engine = summary.get(keys[0]), summary.get(keys[1])
    if not client or not engine or not engine["median"]:
        return None
    diff = (client["median"] - engine["median"]) / engine["median"]
    return {
        names[0]: client["median"],
        names[1]: engine["median"],
        "diff_pct": round(100 * diff, 2),
        "agree": abs(diff) <= tolerance,
    }
