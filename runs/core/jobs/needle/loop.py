"""The needle job: one fact hidden in a long text, in the style of RULER's niah_single_1.

A random key and a 7-digit value ("One of the special magic numbers for {key} is: {value}.")
sit at a chosen depth of a repeated, neutral filler text; the question after it asks for the
value. Each prompt is sized with the engine's own tokenizer (llama-server, vLLM and SGLang have
/tokenize; Ollama is calibrated from prompt_eval_count) until its count is within a tolerance
of the target length. The score is the number of answers that contain the value.
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engines.clients.base import EngineClient, GenerationRequest
from runs.core.jobs.progress import RunProgress
from runs.core.jobs.tokens import Tokenizer, filler, size_text
from runs.core.request_figures import request_metrics, send

__all__ = [
    "Needle",
    "NeedleJob",
    "Prompt",
    "Tokenizer",
    "found_in",
    "run_needle",
    "size_prompt",
    "summarize_needle",
]

# RULER's niah template, for one needle whose value is a number.
TEMPLATE = (
    "Some special magic numbers are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the numbers afterwards.\n{context}\n"
    "What is the special magic number for {key} mentioned in the provided text?"
)
NEEDLE = "One of the special magic numbers for {key} is: {value}."
# Keys are adjective-noun pairs, as RULER's word keys are.
ADJECTIVES = "amber brisk calm dusty eager faint gentle hollow ivory jolly keen lucid mellow nimble olive"
NOUNS = "anchor basket candle dolphin engine falcon garden harbor island jacket kettle lantern meadow orchard"

@dataclass(frozen=True)
class NeedleJob:
    """The needle grid: one request per (length, depth).

    :param lengths: target prompt lengths in tokens, as the engine's tokenizer counts them.
    :param depths: where the needle sits, as a fraction of the haystack (0 = start, 1 = end).
    :param seed: picks each request's key and value.
    :param tolerance: how far (as a fraction) a prompt's token count may be from its target.
    :param extra: laid over every request body (e.g. Ollama's {"options": {"num_ctx": ...}}).
    :param thinking, reasoning_effort: the config's, sent with every request.
    """

    model: str
    lengths: Sequence[int] = (32768, 65536)
    depths: Sequence[float] = (0.1, 0.5, 0.9)
    seed: int = 0
    answer_tokens: int = 32
    tolerance: float = 0.02
    extra: dict[str, Any] = field(default_factory=dict)
    thinking: bool | None = None
    reasoning_effort: str | None = None

    def __post_init__(self) -> None:
        if not self.lengths or any(n < 1 for n in self.lengths):
            raise ValueError("lengths must be one or more token counts >= 1")
        if not self.depths or any(not 0 <= d <= 1 for d in self.depths):
            raise ValueError("depths must be one or more fractions between 0 and 1")
        if self.answer_tokens < 1:
            raise ValueError("answer_tokens must be >= 1")
        if not 0 < self.tolerance < 0.5:
            raise ValueError("tolerance must be between 0 and 0.5")

    def request(self, prompt: str) -> GenerationRequest:
        messages = [{"role": "user", "content": prompt}]
        return GenerationRequest(
            self.model, messages, max_tokens=self.answer_tokens, temperature=0.0, extra=self.extra,
            thinking=self.thinking, reasoning_effort=self.reasoning_effort,
        )


@dataclass(frozen=True)
class Needle:
    """One request's needle: its key, value and depth, and the filler sentence to begin with.

    Prompts that begin with different sentences share no cached prefix beyond the opening
    line, so each request's prefill is measured whole (run_needle gives up to 12 requests
    different beginnings, one per filler sentence).
    """

    key: str
    value: str
    depth: float
    start: int = 0

    def prompt(self, sentences: int) -> str:
        """The question after `sentences` filler sentences, with the needle at its depth."""
        said = filler(sentences, self.start)
        said.insert(round(self.depth * sentences), NEEDLE.format(key=self.key, value=self.value))
        return TEMPLATE.format(context=" ".join(said), key=self.key)


@dataclass(frozen=True)
class Prompt:
    """A sized prompt: its needle, target length, filler sentence count, text and the tokenizer's count."""

    needle: Needle
    target: int
    sentences: int
    text: str
    tokens: int


async def run_needle(
    client: EngineClient, job: NeedleJob, progress: RunProgress, tokenizer: Tokenizer
) -> dict[str, Any]:
    """Size and send one prompt per (length, depth); each answer is a "request" sample.

    :param tokenizer: counts a text's tokens as the engine does (`openai_tokenizer`,
        `ollama_calibrator`).
    Raises EngineError naming the request that failed, or when a prompt cannot be sized.
    """
    total = len(job.lengths) * len(job.depths)
    await progress.on_start(total)
    rng = random.Random(job.seed)
    rows: list[dict[str, Any]] = []
    for length in job.lengths:
        sentences = None  # the last depth's count starts the next depth's search
        for depth in job.depths:
            needle = _draw(rng, depth, start=len(rows))
            prompt = await size_prompt(tokenizer, needle, length, job.tolerance, sentences)
            sentences = prompt.sentences
            where = f"request {len(rows) + 1} of {total} ({length} tokens, depth {depth:g})"
            rows.append(await _ask(client, job, prompt, where))
            await progress.on_sample("request", rows[-1])
    return summarize_needle(rows)


def _draw(rng: random.Random, depth: float, start: int) -> Needle:
    key = f"{rng.choice(ADJECTIVES.split())}-{rng.choice(NOUNS.split())}"
    return Needle(key, str(rng.randrange(1_000_000, 10_000_000)), depth, start)


async def _ask(client: EngineClient, job: NeedleJob, prompt: Prompt, where: str) -> dict[str, Any]:
    """Send the prompt; the row says whether the answer has the value and how long the prompt was.

    length_error is the engine's count of the whole prompt (chat template included) against the
    target; the tokenizer's count stands in when the engine gives none.
    """
    gen = await send(client, job.request(prompt.text), where)
    metrics = request_metrics(gen)
    measured = prompt.tokens if metrics["prompt_tokens"] is None else metrics["prompt_tokens"]
    keys = ("prompt_tokens", "cached_tokens", "ttft_s", "e2e_s", "prefill_tps", "output_tokens")
    return {
        "length": prompt.target,
        "depth": prompt.needle.depth,
        "key": prompt.needle.key,
        "value": prompt.needle.value,
        "haystack_tokens": prompt.tokens,
        "length_error": round((measured - prompt.target) / prompt.target, 5),
        "found": found_in(gen.text, prompt.needle.value),
        "answer": gen.text[:200],
        "prefill_s": gen.figures.prompt_s,
    } | {k: metrics[k] for k in keys}


def found_in(answer: str, value: str) -> bool:
    """The value appears in the answer as a whole run of digits (not inside a longer number)."""
    return value in re.findall(r"\d+", answer)


async def size_prompt(
    count: Tokenizer, needle: Needle, target: int, tolerance: float, guess: int | None = None
) -> Prompt:
    """The prompt whose token count is within `tolerance` of `target` (tokens.size_text).

    :param guess: the sentence count to try first (e.g. the one sized for the previous depth).
    Raises EngineError when no sentence count comes within the tolerance.
    """
    sized = await size_text(count, needle.prompt, target, tolerance, guess, what="a needle prompt")
    return Prompt(needle, target, sized.sentences, sized.text, sized.tokens)


def summarize_needle(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Values found out of requests sent, per length and per depth, and the worst length error."""
    return {
        "score": sum(r["found"] for r in rows),
        "total": len(rows),
        "by_length": _tally(rows, "length"),
        "by_depth": _tally(rows, "depth"),
        "length_error_max": max((abs(r["length_error"]) for r in rows), default=None),
    }


def _tally(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, int]]:
    # String keys, as they come back from a JSON field.
    tally: dict[str, dict[str, int]] = {}
    for row in rows:
        entry = tally.setdefault(f"{row[key]:g}", {"found": 0, "total": 0})
        entry["found"] += row["found"]
        entry["total"] += 1
    return tally
