"""A text's tokens as the engine counts them, and a filler text sized to a token count.

The needle job hides a fact in a text of a given length; a concurrency sweep can send prompts of the
length a published claim states (its ``pp``). Both size text with the engine's own tokenizer:
llama-server, vLLM and SGLang have /tokenize; Ollama is calibrated once from prompt_eval_count.
The filler is neutral prose free of digits (a needle's value is then the only number in it).
"""
from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engines.clients.base import EngineClient, EngineError, GenerationRequest
from runs.core.request_figures import send

__all__ = ["CONTEXT_SPARE", "FILLER", "Sized", "Tokenizer", "context_for", "engine_tokenizer", "filler",
           "ollama_calibrator", "openai_tokenizer", "size_text"]

Tokenizer = Callable[[str], Awaitable[int]]

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
MAX_SIZING_STEPS = 12
CONTEXT_SPARE = 512  # tokens of an Ollama context beyond the prompt and answer (the chat template)
# Before the tokenizer has been heard: a guess of characters per token for the first step.
GUESS_CHARS_PER_TOKEN = 4.0
# The Ollama calibration's two texts, in filler sentences (about 1,000 and 5,200 characters, some
# 250 and 1,300 tokens): within even a 2,048-token default context, and far enough apart that the
# chat template's tokens cancel out.
CALIBRATION_SENTENCES = (10, 70)


def filler(sentences: int, start: int = 0) -> list[str]:
    """`sentences` filler sentences, beginning with the `start`-th (texts that begin differently
    share no cached prefix)."""
    return [FILLER[(start + i) % len(FILLER)] for i in range(sentences)]


@dataclass(frozen=True)
class Sized:
    """A text sized by `size_text`: its filler sentence count, the text and the tokenizer's count."""

    sentences: int
    text: str
    tokens: int


async def size_text(
    count: Tokenizer, build: Callable[[int], str], target: int, tolerance: float, guess: int | None = None,
    what: str = "a prompt", nearest: bool = False,
) -> Sized:
    """The text `build(n)` (n filler sentences) whose token count is within `tolerance` of `target`.

    Each step takes the tokens per filler sentence measured so far to the target (a secant on
    the sentence count), kept inside the bracket of counts already known to be under and over.
    :param guess: the sentence count to try first (e.g. the one sized for a previous text).
    :param nearest: when two sentence counts next to each other straddle the target and neither
        is within the tolerance (a sentence is more than the tolerance of a short target), the
        closer of them rather than an error.
    Raises EngineError when the frame alone is too long, or no sentence count comes within the tolerance.
    """
    frame = await count(build(0))
    if frame > target * (1 + tolerance):
        raise EngineError(f"{what} of {target} tokens is too short: the rest of it alone is {frame}")
    n, low, high = guess or _first_guess(target - frame), 0, math.inf
    counted: dict[int, int] = {}
    for _ in range(MAX_SIZING_STEPS):
        text = build(n)
        counted[n] = tokens = await count(text)
        if abs(tokens - target) <= tolerance * target:
            return Sized(n, text, tokens)
        low, high = (n, high) if tokens < target else (low, n)
        if high - low <= 1:
            break
        n = _next_guess(n, tokens, frame, target, low, high)
    best = min(counted, key=lambda k: abs(counted[k] - target))
    if nearest and high - low <= 1:
        return Sized(best, build(best), counted[best])
    raise EngineError(
        f"cannot size {what} to {target} tokens within {tolerance:.0%}: "
        f"the closest filler length counted {counted[best]} tokens"
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


def context_for(needs_num_ctx: bool, prompt_tokens: int, answer_tokens: int) -> dict[str, Any]:
    """Request fields giving an engine room for the prompt and answer: Ollama's context window
    (num_ctx, CONTEXT_SPARE tokens more for the chat template) would otherwise cut a long prompt
    short; other kinds, and a job that sizes no prompt (0 tokens), need nothing."""
    if not needs_num_ctx or not prompt_tokens:
        return {}
    return {"options": {"num_ctx": prompt_tokens + answer_tokens + CONTEXT_SPARE}}


def engine_tokenizer(
    client: EngineClient, tokenizer: str, model: str, extra: dict[str, Any] | None = None
) -> Tokenizer:
    """The counter for an engine kind: its kind's `tokenizer` says "calibrated" (Ollama) or not."""
    if tokenizer == "calibrated":
        return ollama_calibrator(client, model, extra)
    return openai_tokenizer(client, model)


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
        text = " ".join(filler(sentences))
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
