"""The concurrency sweep: c identical requests at once, per level; the box's total throughput
against each answer's time to finish (docs/metrics.md, "concurrency point").

Every answer has the same fixed length: max_tokens, with ignore_eos on OpenAI-compatible
engines (Ollama stops at num_predict, which the client sets from max_tokens). With prompt_tokens
(a published claim's ``pp``), every request's prompt is sized to that many tokens by the engine's
own tokenizer, and no two requests of the run share a cached prefix beyond the system prompt.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engines import kinds
from engines.clients.base import EngineClient, Generation, GenerationRequest
from measure.stats import summarize
from runs.core.jobs.concurrency.pace import achieved_concurrency, schedule_delays
from runs.core.jobs.concurrency.split import SPLIT_FROM, LevelFigures, SplitLevels, SplitPlan
from runs.core.jobs.progress import ClientPace, RunProgress
from runs.core.jobs.prompts import SPEED_PROMPTS, Prompt
from runs.core.jobs.tokens import Sized, Tokenizer, filler, size_text
from runs.core.outcomes import Failures, count_outcomes, succeeded
from runs.core.request_figures import request_metrics

__all__ = ["ConcurrencyJob", "run_concurrency", "summarize_concurrency", "total_tps"]

# A level above MAX_PER_PROCESS (one client's connection pool) is split across processes (split.py).
MAX_LEVEL = 256
MAX_PROMPT_TOKENS = 131_072
# How far a sized prompt's count may be from prompt_tokens (the chat template adds its own on top).
PROMPT_TOLERANCE = 0.02


@dataclass(frozen=True)
class ConcurrencyJob:
    """What a concurrency sweep sends.

    :param levels: how many requests to send at once, one level after another.
    :param answer_tokens: every answer's fixed length.
    :param reps: bursts per level.
    :param warmup: unrecorded single requests first (a model load must not count as level 1).
    :param split_from, processes: levels of split_from requests or more are sent by `processes`
        measuring processes (0: one per core beyond the first) under one plan (split.py).
    :param prompt_tokens: each prompt's length in the engine's tokens (0: the prompt as it is).
    :param extra: laid over every request body (e.g. Ollama's {"options": {"num_ctx": ...}}).
    """

    model: str
    levels: Sequence[int] = (1, 2, 4, 8, 16)
    answer_tokens: int = 256
    reps: int = 1
    sampling: dict[str, Any] = field(default_factory=dict)
    warmup: int = 1
    prompt: Prompt = SPEED_PROMPTS[4]  # free prose: an answer that runs to any length
    split_from: int = SPLIT_FROM
    processes: int = 0
    prompt_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.levels or any(not 1 <= c <= MAX_LEVEL for c in self.levels):
            raise ValueError(f"levels must be 1 to {MAX_LEVEL} concurrent requests each")
        if self.answer_tokens < 1 or self.reps < 1:
            raise ValueError("answer_tokens and reps must be >= 1")
        if not 0 <= self.prompt_tokens <= MAX_PROMPT_TOKENS:
            raise ValueError(f"prompt_tokens must be 0 to {MAX_PROMPT_TOKENS}")
        SplitPlan(self.split_from, self.processes)  # raises for a plan out of range

    def request(self, ignore_eos: bool, user: str | None = None) -> GenerationRequest:
        """The request, with `user` as its question where given (a sized prompt)."""
        s = self.sampling
        messages = self.prompt.messages()
        if user is not None:
            messages[-1] = {"role": "user", "content": user}
        return GenerationRequest(
            model=self.model,
            messages=messages,
            max_tokens=self.answer_tokens,
            temperature=s.get("temperature", 0.0),
            top_p=s.get("top_p"),
            top_k=s.get("top_k"),
            seed=s.get("seed", 0),
            thinking=s.get("thinking"),
            reasoning_effort=s.get("reasoning_effort"),
            extra=({"ignore_eos": True} if ignore_eos else {}) | self.extra,
        )


async def run_concurrency(
    client: EngineClient, job: ConcurrencyJob, progress: RunProgress, pace: ClientPace | None = None,
    tokenizer: Tokenizer | None = None,
) -> dict[str, Any]:
    """Send each level's burst `reps` times; report every request, then each level; summarize.

    A failed request is a row with its reason (runs/core/outcomes.py); raises EngineError naming
    the level and request when the run must stop (engine unreachable, failures in a row, none
    succeeded). `pace` hears each request's schedule delay and each level's achieved concurrency.
    `tokenizer` counts the engine's tokens where the job sizes its prompts (prompt_tokens).
    """
    await progress.on_start(job.reps * sum(job.levels))
    bursts = await Bursts.of(job, kinds.get(client.engine_kind).honours_ignore_eos, tokenizer)
    failures = Failures()
    for _ in range(job.warmup):
        await failures.send(client, bursts.next(1)[0], "warm-up request")
    levels: dict[str, Any] = {}
    every: list[dict[str, Any]] = []
    figures = LevelFigures(summarize_level, total_tps)
    async with SplitLevels(client, SplitPlan(job.split_from, job.processes), pace, figures) as split:
        for c in job.levels:
            if split.drives(c):  # several measuring processes under one plan (split.py)
                each = [bursts.next(c) for _ in range(job.reps)]
                rows, levels[str(c)] = await split.level(each, job.answer_tokens, progress)
            else:
                rows, levels[str(c)] = await _level(client, bursts, job, c, failures, progress, pace)
            every += rows
            if bursts.sized:  # the engine's own count of each prompt, its chat template included
                levels[str(c)]["prompt_tokens"] = summarize(r.get("prompt_tokens") for r in succeeded(rows))
            await progress.on_sample("level", levels[str(c)])
    Failures.check_any_succeeded(every)
    summary = summarize_concurrency(levels, job.answer_tokens, bursts.sized)
    return summary | {"outcomes": count_outcomes(every)}


class Bursts:
    """Each burst's requests: the job's one request c times, or, with prompt_tokens, c prompts of
    that length that begin with their own serial number, so none reuses another's cached prefix."""

    def __init__(self, job: ConcurrencyJob, ignore_eos: bool, sized: Sized | None) -> None:
        self.job, self.ignore_eos, self.sized, self.serial = job, ignore_eos, sized, 0
        self.plain = job.request(ignore_eos)

    @classmethod
    async def of(cls, job: ConcurrencyJob, ignore_eos: bool, tokenizer: Tokenizer | None) -> Bursts:
        """Sizes the long prompt first where the job asks for one (EngineError if it cannot)."""
        if not job.prompt_tokens:
            return cls(job, ignore_eos, None)
        if tokenizer is None:
            raise ValueError("prompt_tokens needs the engine's tokenizer")
        build = lambda n: long_prompt(job.prompt, n, 0)  # noqa: E731
        sized = await size_text(tokenizer, build, job.prompt_tokens, PROMPT_TOLERANCE, what="a prompt",
                                nearest=True)
        return cls(job, ignore_eos, sized)

    def next(self, c: int) -> list[GenerationRequest]:
        if self.sized is None:
            return [self.plain] * c
        first, self.serial = self.serial, self.serial + c
        return [
            self.job.request(self.ignore_eos, long_prompt(self.job.prompt, self.sized.sentences, first + i))
            for i in range(c)
        ]


def long_prompt(prompt: Prompt, sentences: int, serial: int) -> str:
    """`sentences` of filler before the prompt's question, headed by the request's serial number."""
    return f"Request {serial:06d}. {' '.join(filler(sentences))}\n\n{prompt.user}"


async def _level(
    client: EngineClient, bursts: Bursts, job: ConcurrencyJob, c: int, failures: Failures,
    progress: RunProgress, pace: ClientPace | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One level's bursts: its request rows (each reported) and its summary."""
    rows: list[dict[str, Any]] = []
    totals: list[float | None] = []
    achieved: list[float | None] = []
    for rep in range(job.reps):
        planned = time.perf_counter()  # the clients' clock (Generation.sent_at)
        gens = await _burst(client, bursts.next(c), f"level {c}, repetition {rep + 1}", failures)
        ok = [g for g in gens if isinstance(g, Generation)]
        totals.append(total_tps(ok))
        # A burst with a failure had fewer than c to keep in flight: not the client's shortfall.
        achieved.append(achieved_concurrency(ok, planned) if len(ok) == c else None)
        _report_delays(pace, schedule_delays(ok, planned))
        for i, gen in enumerate(gens):
            row = gen if isinstance(gen, dict) else request_metrics(gen)
            rows.append(row | {"concurrency": c, "rep": rep, "index": i})
            await progress.on_sample("request", rows[-1])
    level = summarize_level(c, rows, totals, job.answer_tokens, achieved)
    if pace is not None and level["achieved_concurrency"] is not None:
        pace.achieved(c, level["achieved_concurrency"])
    return rows, level


def _report_delays(pace: ClientPace | None, delays_s: Sequence[float]) -> None:
    if pace is None:
        return
    for delay_s in delays_s:
        pace.scheduled(delay_s)


async def _burst(
    client: EngineClient, requests: Sequence[GenerationRequest], where: str, failures: Failures
) -> list[Generation | dict[str, Any]]:
    """The requests at once on one client (its pool opens a connection each); a failed one is its
    row, and a failure that stops the run cancels the rest of the burst."""
    c = len(requests)
    tasks = [
        asyncio.ensure_future(failures.send(client, request, f"{where}, request {i + 1} of {c}"))
        for i, request in enumerate(requests)
    ]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def total_tps(gens: Sequence[Generation]) -> float | None:
    """The box's total generated tok/s: all output tokens / (last finish - first send)."""
    if not gens:
        return None
    span = max(g.finished_at for g in gens) - min(g.sent_at for g in gens)
    tokens = sum(g.figures.output_tokens or 0 for g in gens)
    return tokens / span if span > 0 else None


def summarize_level(
    c: int, all_rows: Sequence[dict[str, Any]], totals: Sequence[float | None], answer_tokens: int,
    achieved: Sequence[float | None] = (),
) -> dict[str, Any]:
    """One level: total tok/s over bursts; time to finish, TTFT, prefill and per-answer speed over the
    requests that succeeded (total tok/s counts only their tokens); outcomes over all.

    short_answers counts answers that stopped before answer_tokens (the engine ignored ignore_eos);
    achieved_concurrency is the mean over the bursts that all succeeded of each one's achieved
    concurrency (pace.py), None when none did.
    """
    rows = succeeded(all_rows)
    full = [a for a in achieved if a is not None]
    return {
        "concurrency": c,
        "total_tps": summarize(totals),
        "finish_s": summarize(r["e2e_s"] for r in rows),
        "ttft_s": summarize(r["ttft_s"] for r in rows),
        "prefill_tps": summarize(r.get("prefill_tps") for r in rows),
        "decode_tps_client": summarize(r["decode_tps_client"] for r in rows),
        "output_tokens": summarize(r["output_tokens"] for r in rows),
        "short_answers": sum(1 for r in rows if r["output_tokens"] < answer_tokens),
        "requests": len(rows),
        "outcomes": count_outcomes(all_rows),
        "achieved_concurrency": round(sum(full) / len(full), 3) if full else None,
    }


def summarize_concurrency(
    levels: dict[str, dict[str, Any]], answer_tokens: int, sized: Sized | None = None
) -> dict[str, Any]:
    """Levels keyed by str(c) (JSON-safe), and the highest level against the lowest.

    scaling: total tok/s at the highest level / at the lowest (1 in the default sweep);
    finish_s_ratio: median time to finish at the highest level / at the lowest;
    prompt_tokens: the sized prompt's length by the tokenizer (its question, without the chat
    template), where the job sized one.
    """
    low, high = min(levels, key=int), max(levels, key=int)
    return ({"prompt_tokens": sized.tokens} if sized else {}) | {
        "levels": levels,
        "baseline": int(low),
        "max_concurrency": int(high),
        "scaling": _ratio(levels[high]["total_tps"], levels[low]["total_tps"]),
        "finish_s_ratio": _ratio(levels[high]["finish_s"], levels[low]["finish_s"]),
        "answer_tokens": answer_tokens,
        "requests": sum(level["requests"] for level in levels.values()),
    }


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    if not a or not b or not b["median"]:
        return None
    return a["median"] / b["median"]
