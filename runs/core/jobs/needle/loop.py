"""The needle job: one fact hidden in a long text, in the style of RULER's niah_single_1.

A random key and a 7-digit value ("One of the special magic numbers for {key} is: {value}.")
sit at a chosen depth of a repeated, neutral filler text; the question after it asks for the
value. Each prompt is sized with the engine's own tokenizer (llama-server, vLLM and SGLang have
/tokenize; Ollama is calibrated from prompt_eval_count) until its count is within a tolerance
of the target length. The score is the number of answers that contain the value.
"""
from __future__ import annotations

import math
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engines.clients.base import EngineClient, EngineError, GenerationRequest
from runs.core.jobs.progress import RunProgress
from runs.core.request_figures import request_metrics, send

__all__ = [
    "Needle",
    "NeedleJob",
    "Prompt",
    "Tokenizer",
    "found_in",
    "ollama_calibrator",
    "openai_tokenizer",
    "run_needle",
    "size_prompt",
    "summarize_needle",
]

Tokenizer = Callable[[str], Awaitable[int]]

# RULER's niah template, for one needle whose value is a number.
TEMPLATE = (
    "Some special magic numbers are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the numbers afterwards.\n{context}\n"
    "What is the special magic number for {key} mentioned in the provided text?"
)
NEEDLE = "One of the special magic numbers for {key} is: {value}."
# Neutral and free of digits, so the value is the only number in the haystack.
FILLER = (
    "The river runs slowly past the old mill and the low stone bridge.",
    "Most of the houses in the village have red roofs and small gardens at the back.",
    "In the afternoon the market square fills with people buying bread and fruit.",
    "A narrow path climbs through the woods to a quiet lake above the valley.",
    "The library keeps its longest opening hours during the winter months.",
    "Farmers bring their carts down the hill road early in the morning.",
    "The wind from the west usually brings rain by the end of the day.",
    "Children walk to the school along the canal when the weather is fine.",
    "An old clock tower stands at the corner where the two main streets meet.",
    "Boats are tied along the harbour wall until the tide comes back in.",
    "The bakery on the high street closes its doors shortly after lunch.",
    "Tall trees line both sides of the avenue that leads to the park.",
)
# Keys are adjective-noun pairs, as RULER's word keys are.
ADJECTIVES = "amber brisk calm dusty eager faint gentle hollow ivory jolly keen lucid mellow nimble olive"
NOUNS = "anchor basket candle dolphin engine falcon garden harbor island jacket kettle lantern meadow orchard"
MAX_SIZING_STEPS = 12
# Before the tokenizer has been heard: a guess of characters per token for the first step.
GUESS_CHARS_PER_TOKEN = 4.0
# The Ollama calibration's two prompts, in filler sentences (about 1,000 and 5,200 characters, some
# 250 and 1,300 tokens): within even a 2,048-token default context, and far enough apart that the
# chat template's tokens cancel out.
CALIBRATION_SENTENCES = (10, 70)


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
        filler = [FILLER[(self.start + i) % len(FILLER)] for i in range(sentences)]
        filler.insert(round(self.depth * sentences), NEEDLE.format(key=self.key, value=self.value))
        return TEMPLATE.format(context=" ".join(filler), key=self.key)


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
    """The prompt whose token count is within `tolerance` of `target`.

    Each step takes the tokens per filler sentence measured so far to the target (a secant on
    the sentence count), kept inside the bracket of counts already known to be under and over.
    :param guess: the sentence count to try first (e.g. the one sized for the previous depth).
    Raises EngineError when no sentence count comes within the tolerance.
    """
    frame = await count(needle.prompt(0))
    if frame > target * (1 + tolerance):
        raise EngineError(f"a needle prompt of {target} tokens is too short: the question alone is {frame}")
    n, low, high = guess or _first_guess(target - frame), 0, math.inf
    counted: dict[int, int] = {}
    for _ in range(MAX_SIZING_STEPS):
        text = needle.prompt(n)
        counted[n] = tokens = await count(text)
        if abs(tokens - target) <= tolerance * target:
            return Prompt(needle, target, n, text, tokens)
        low, high = (n, high) if tokens < target else (low, n)
        if high - low <= 1:
            break
        n = _next_guess(n, tokens, frame, target, low, high)
    closest = min(counted.values(), key=lambda t: abs(t - target))
    raise EngineError(
        f"cannot size a needle prompt to {target} tokens within {tolerance:.0%}: "
        f"the closest filler length counted {closest} tokens"
    )


def _first_guess(tokens: int) -> int:
    chars = sum(len(s) + 1 for s in FILLER) / len(FILLER)
    return max(1, round(tokens * GUESS_CHARS_PER_TOKEN / chars))


def _next_guess(n: int, tokens: int, frame: int, target: int, low: int, high: float) -> int:
    per_sentence = max(tokens - frame, 1) / n
    guess = round((target - frame) / per_sentence)
    if guess == n:  # the estimate rounds back to where we are: take one step towards the target
        guess += 1 if tokens < target else -1
    if not low < guess < high:
        guess = (low + int(high)) // 2 if high < math.inf else 2 * n
    return guess


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


def openai_tokenizer(client: EngineClient, model: str | None = None) -> Tokenizer:
    """Count with the engine's POST /tokenize (llama-server, vLLM, SGLang).

    llama-server reads "content", vLLM and SGLang read "prompt"; each ignores the other key.
    Raises EngineHTTPError when the engine has no /tokenize (404), EngineError on a bad answer.
    """

    async def count(text: str) -> int:
        body: dict[str, Any] = {"content": text, "prompt": text}
        if model is not None:
            body["model"] = model
        answer = await client.post_json("/tokenize", body)
        tokens = answer.get("tokens")
        if not isinstance(tokens, list):
            raise EngineError(f"/tokenize answered without a token list: {str(answer)[:100]}")
        return len(tokens)

    return count


def ollama_calibrator(client: EngineClient, model: str, extra: dict[str, Any] | None = None) -> Tokenizer:
    """Estimate counts for an engine without a tokenizer endpoint (Ollama).

    On first use, two filler prompts are sent with one answer token each; the difference of
    their prompt_eval_count over the difference of their lengths is the model's tokens per
    character on this text (the chat template's tokens cancel out). Counts are then scaled.
    """
    slope: list[float] = []

    async def count(text: str) -> int:
        if not slope:
            slope.append(await _tokens_per_char(client, model, extra or {}))
        return round(len(text) * slope[0])

    return count


async def _tokens_per_char(client: EngineClient, model: str, extra: dict[str, Any]) -> float:
    points = []
    for sentences in CALIBRATION_SENTENCES:
        text = Needle("calm-harbor", "1234567", 0.5).prompt(sentences)
        request = GenerationRequest(model, [{"role": "user", "content": text}], max_tokens=1, extra=extra)
        gen = await send(client, request, f"tokenizer calibration ({sentences} sentences)")
        if gen.figures.prompt_tokens is None:
            raise EngineError("tokenizer calibration: the engine did not report its prompt tokens")
        points.append((len(text), gen.figures.prompt_tokens))
    (chars_a, tokens_a), (chars_b, tokens_b) = points
    if tokens_b <= tokens_a:
        raise EngineError(
            f"tokenizer calibration: a longer prompt counted {tokens_b} tokens, not more than {tokens_a}"
        )
    return (tokens_b - tokens_a) / (chars_b - chars_a)
