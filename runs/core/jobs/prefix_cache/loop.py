"""The prefix-cache probe: grow one conversation, insert one unrelated request, continue.

A working prompt cache computes only each step's new message. llama-server saves the
conversation's state to its RAM cache when another request takes the slot, and silently drops
a state larger than the limit (the log says "exceeds cache size limit"); the continuation then
recomputes the whole conversation (seed: 62.6 s instead of 3.75 s at 48,000 tokens).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engines.clients.base import EngineClient, EngineError, GenerationRequest
from runs.core.jobs.progress import RunProgress
from runs.core.jobs.source_text import source_text
from runs.core.outcomes import Failures, count_outcomes, succeeded
from runs.core.request_figures import request_metrics

__all__ = ["PrefixCacheJob", "run_prefix_cache", "summarize_probe"]

SYSTEM = "You are a coding assistant reading a source file part by part. Answer in one short sentence."
STEP = "Part {step} of the file:\n\n{source}\n\nWhat does the last complete function here do?"
UNRELATED = "What is the capital of France? Answer with one word."
CONTINUE = "Thanks. In one short sentence, which function names have you seen so far?"
# Without cache counts (Ollama), a continuation slower than TTFT_FACTOR x the last step recomputed.
TTFT_FACTOR = 2.0


@dataclass(frozen=True)
class PrefixCacheJob:
    """The probe's shape.

    :param steps: grow steps; each appends bytes_per_step bytes of source text in a user message.
    :param insert_after: the grow step after which the unrelated request and the continuation
        are sent (default: the last); any later grow steps follow the continuation.
    :param discard_share: a continuation whose new-input share is above this, after a last grow
        step below it, is a discarded cache.
    """

    model: str
    steps: int = 30
    bytes_per_step: int = 6000
    answer_tokens: int = 16
    insert_after: int | None = None
    discard_share: float = 0.5
    seed: int = 0
    thinking: bool | None = None  # the config's, sent with every request
    reasoning_effort: str | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.bytes_per_step < 1 or self.answer_tokens < 1:
            raise ValueError("steps, bytes_per_step and answer_tokens must be >= 1")
        if self.insert_after is not None and not 1 <= self.insert_after <= self.steps:
            raise ValueError(f"insert_after must be between 1 and steps ({self.steps})")
        if not 0 < self.discard_share < 1:
            raise ValueError("discard_share must be between 0 and 1")

    def request(self, messages: list[dict[str, Any]]) -> GenerationRequest:
        return GenerationRequest(self.model, list(messages), max_tokens=self.answer_tokens, temperature=0.0,
                                 thinking=self.thinking, reasoning_effort=self.reasoning_effort)

    def part(self, step: int, first_line: int) -> str:
        """The step's bytes_per_step bytes of source, numbered on from the part before."""
        return source_text(self.bytes_per_step, seed=self.seed * 100_003 + step, first_line=first_line)


async def run_prefix_cache(
    client: EngineClient, job: PrefixCacheJob, progress: RunProgress
) -> dict[str, Any]:
    """Send the grow steps, the unrelated request and the continuation; each is a "step" sample.

    A failed step is a row with its reason (runs/core/outcomes.py) and leaves the conversation
    without its message; raises EngineError naming the step when the run must stop, or when the
    insertion, the continuation or the grow step before them failed (nothing left to judge by).
    """
    await progress.on_start(job.steps + 2)
    probe = _Probe(client, job, progress)
    insert_after = job.steps if job.insert_after is None else job.insert_after
    first_line = 1
    for step in range(1, job.steps + 1):
        source = job.part(step, first_line)
        first_line += source.count("\n") + 1
        await probe.converse(STEP.format(step=step, source=source), "grow")
        if step == insert_after:
            await probe.send([{"role": "user", "content": UNRELATED}], "inserted")
            await probe.converse(CONTINUE, "continuation")
    return summarize_probe(probe.rows, job.discard_share)


class _Probe:
    """The growing conversation and the rows measured so far."""

    def __init__(self, client: EngineClient, job: PrefixCacheJob, progress: RunProgress) -> None:
        self.client, self.job, self.progress = client, job, progress
        self.history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        self.rows: list[dict[str, Any]] = []
        self.failures = Failures()

    async def converse(self, message: str, label: str) -> None:
        """Send the conversation with one more user message; keep the answer in it (or, when the
        request failed, drop the message)."""
        self.history.append({"role": "user", "content": message})
        answer = await self.send(self.history, label)
        if answer is None:
            self.history.pop()
        else:
            self.history.append({"role": "assistant", "content": answer})

    async def send(self, messages: list[dict[str, Any]], label: str) -> str | None:
        """The answer's text; None when the request failed (its row says why)."""
        where = f"step {len(self.rows) + 1} ({label})"
        gen = await self.failures.send(self.client, self.job.request(messages), where)
        figures = gen if isinstance(gen, dict) else step_row(request_metrics(gen))
        row = figures | {"step": len(self.rows) + 1, "label": label}
        self.rows.append(row)
        await self.progress.on_sample("step", row)
        return None if isinstance(gen, dict) else gen.text


def step_row(metrics: dict[str, Any]) -> dict[str, Any]:
    """One request's figures, with new (uncached) prompt tokens and their share of the prompt.

    New tokens are unknown (None) when the engine does not say how many were cached (Ollama).
    """
    prompt, cached = metrics["prompt_tokens"], metrics["cached_tokens"]
    new = prompt - cached if prompt is not None and cached is not None else None
    keys = ("ttft_s", "e2e_s", "prefill_tps", "output_tokens", "prompt_tokens", "cached_tokens")
    return {key: metrics[key] for key in keys} | {
        "new_tokens": new,
        "new_share": new / prompt if new is not None and prompt else None,
    }


def summarize_probe(rows: Sequence[dict[str, Any]], discard_share: float) -> dict[str, Any]:
    """The continuation against the last grow step before the insertion, and whether the cache
    was discarded: judged by cached-token counts, or by TTFT where the engine gives none."""
    inserted = next(i for i, r in enumerate(rows) if r["label"] == "inserted")
    before, continuation = rows[inserted - 1], rows[inserted + 1]
    for row in (before, rows[inserted], continuation):
        if row.get("failed"):
            raise EngineError(f"the probe has nothing to judge the cache by: {row['error']}")
    detected, detected_by = detect_discard(before, continuation, discard_share)
    return {
        "outcomes": count_outcomes(rows),
        "cache_discard_detected": detected,
        "detected_by": detected_by,
        "steps": sum(1 for r in succeeded(rows) if r["label"] == "grow"),
        "conversation_tokens": before["prompt_tokens"],
        "last_grow": before,
        "inserted": rows[inserted],
        "continuation": continuation,
        "expected_new_tokens": _expected_new(before, continuation),
        "ttft_ratio": _ratio(continuation["ttft_s"], before["ttft_s"]),
        "new_input_share": _share(rows),
        "discard_share": discard_share,
    }


def detect_discard(
    before: dict[str, Any], continuation: dict[str, Any], discard_share: float
) -> tuple[bool | None, str | None]:
    """(discarded?, "cached_tokens" | "ttft"); (None, None) when neither figure is known."""
    if before["new_share"] is not None and continuation["new_share"] is not None:
        reused_before = before["new_share"] < discard_share
        return reused_before and continuation["new_share"] > discard_share, "cached_tokens"
    ratio = _ratio(continuation["ttft_s"], before["ttft_s"])
    if ratio is not None:
        return ratio > TTFT_FACTOR, "ttft"
    return None, None


def _expected_new(before: dict[str, Any], continuation: dict[str, Any]) -> int | None:
    """What a working cache computes: the continuation minus the last step's prompt and answer."""
    if continuation["prompt_tokens"] is None or before["prompt_tokens"] is None:
        return None
    kept = before["prompt_tokens"] + (before["output_tokens"] or 0)
    return max(continuation["prompt_tokens"] - kept, 1)


def _share(all_rows: Sequence[dict[str, Any]]) -> float | None:
    """New prompt tokens / prompt tokens sent, over the whole probe's answered steps (seed: 9.3 %)."""
    rows = succeeded(all_rows)
    if any(r["new_tokens"] is None for r in rows):
        return None
    sent = sum(r["prompt_tokens"] for r in rows)
    return sum(r["new_tokens"] for r in rows) / sent if sent else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None
