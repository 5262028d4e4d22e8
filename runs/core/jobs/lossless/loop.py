"""The lossless check: the same prompts, greedy, with drafting on and off, compared token for token.

Speculative decoding is sold as lossless: with greedy sampling the target model's verification
keeps only the tokens it would have chosen itself, so the answers must not change. The check
sends the speed prompt set once at the config's lookahead and once with drafting off (the engine
relaunched or re-aliased per length by `at_lookahead`, as the lookahead sweep does), at
temperature 0 and the config's seed, and compares each pair of answers as the engine's own
tokenizer splits them (POST /tokenize; engines without one, Ollama, are compared by characters).
docs/metrics.md defines "identical" and "first divergence".
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from engines.clients.base import EngineClient, EngineError, EngineHTTPError
from runs.core.jobs.progress import RunProgress
from runs.core.jobs.spec import AtLookahead
from runs.core.jobs.speed.loop import RequestCount, SpeedJob
from runs.core.request_figures import request_metrics, send

CONTEXT_TOKENS = 3  # tokens shown either side of a first divergence
Tokens = list[tuple[Any, str]]  # (id, piece) per token; by characters: (character, character)


@dataclass(frozen=True)
class LosslessJob:
    """The prompts and sampling to send (the speed job's), and the lookahead to check."""

    speed: SpeedJob
    lookahead: int


@dataclass(frozen=True)
class Answer:
    """One prompt's answer at one lookahead: its text and its tokens."""

    prompt: str
    text: str
    tokens: Tokens
    unit: str  # "token" (the engine's tokenizer) or "character" (no /tokenize)
    capped: bool = False  # the answer stopped at max_tokens: only that much of it was compared
    generated: int | None = None  # tokens the engine says it generated (reasoning included)


async def run_lossless(at_lookahead: AtLookahead, job: LosslessJob, progress: RunProgress) -> dict[str, Any]:
    """Answer every prompt with drafting at job.lookahead, then with it off; compare the pairs."""
    if job.lookahead < 1:
        raise ValueError("a lossless check needs a config that drafts: set its lookahead above 0")
    greedy = replace(job.speed, reps=1, warmup=0, sampling=dict(job.speed.sampling) | {"temperature": 0.0})
    tally = RequestCount(2 * len(greedy.prompts))
    await progress.on_start(tally.total)
    answers: dict[int, list[Answer]] = {}
    for length in (job.lookahead, 0):
        async with at_lookahead(length) as (client, model):
            answers[length] = await _answer_all(client, replace(greedy, model=model), progress, tally, length)
    return summarize_lossless(answers[job.lookahead], answers[0], job.lookahead)


async def _answer_all(
    client: EngineClient, job: SpeedJob, progress: RunProgress, tally: RequestCount, length: int
) -> list[Answer]:
    answers = []
    for prompt in job.prompts:
        tally.done += 1
        where = f"request {tally.done} of {tally.total} ({prompt.name}, lookahead {length})"
        gen = await send(client, job.request(prompt), where)
        row = request_metrics(gen) | {"prompt": prompt.name, "output_type": prompt.output_type}
        await progress.on_sample("request", row | {"draft_length": length, "answer": gen.text})
        tokens, unit = await engine_tokens(client, job.model, gen.text)
        figures = gen.figures
        capped = figures.finish_reason == "length"
        answers.append(Answer(prompt.name, gen.text, tokens, unit, capped, figures.output_tokens))
    return answers


async def engine_tokens(client: EngineClient, model: str, text: str) -> tuple[Tokens, str]:
    """The text as the engine's tokenizer splits it: ((id, piece), ...), "token".

    llama-server reads "content" and gives pieces with with_pieces; vLLM reads "prompt" and gives
    token_strs with return_token_strs (each ignores the other's keys). No special tokens are
    added: only the answer's own tokens. An engine without /tokenize (404, 405) gives the text's
    characters and "character".
    """
    body = {"content": text, "prompt": text, "model": model, "with_pieces": True,
            "return_token_strs": True, "add_special_tokens": False}  # fmt: skip
    try:
        answer = await client.post_json("/tokenize", body)
    except EngineHTTPError as exc:
        if exc.status not in (404, 405):
            raise
        return [(c, c) for c in text], "character"
    return _pieces(answer), "token"


def _pieces(answer: dict[str, Any]) -> Tokens:
    tokens = answer.get("tokens")
    if not isinstance(tokens, list):
        raise EngineError(f"/tokenize answered without a token list: {str(answer)[:100]}")
    strs = answer.get("token_strs")
    if all(isinstance(t, dict) for t in tokens):  # llama-server's with_pieces
        return [(t.get("id"), str(t.get("piece", ""))) for t in tokens]
    if isinstance(strs, list) and len(strs) == len(tokens):
        return [(t, str(s)) for t, s in zip(tokens, strs, strict=True)]
    return [(t, f"#{t}") for t in tokens]  # ids only: shown as ids


def first_divergence(a: Tokens, b: Tokens) -> int | None:
    """The first token index where the two differ (the shorter one's length if it is a prefix of
    the other); None when they are identical."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x[0] != y[0]:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def summarize_lossless(drafted: Sequence[Answer], plain: Sequence[Answer], lookahead: int) -> dict[str, Any]:
    """{"identical_share", "identical", "answers", "all_identical", "unit", "lookahead", "per_prompt",
    "capped"}: "capped" counts the pairs where an answer stopped at max_tokens, so only its first
    max_tokens generated tokens were compared (tokens_* count the compared text as the tokenizer
    splits it, which need not be what the engine generated: generated_* are the engine's counts).

    Each per_prompt entry says whether the pair is identical, and for one that is not, its
    "divergence": the token index, the tokens before it and each answer's tokens from it.
    """
    per_prompt = [_compare(d, p) for d, p in zip(drafted, plain, strict=True)]
    identical = sum(1 for entry in per_prompt if entry["identical"])
    units = {a.unit for a in [*drafted, *plain]}
    return {
        "lookahead": lookahead, "answers": len(per_prompt), "identical": identical,
        "identical_share": identical / len(per_prompt) if per_prompt else None,
        "all_identical": identical == len(per_prompt), "per_prompt": per_prompt,
        "unit": "token" if units == {"token"} else "character",
        "capped": sum(1 for entry in per_prompt if entry["capped"]),
    }  # fmt: skip


def _compare(drafted: Answer, plain: Answer) -> dict[str, Any]:
    a, b = drafted.tokens, plain.tokens
    if drafted.unit != plain.unit:  # one side could not be tokenized: fall back on characters
        a, b = [(c, c) for c in drafted.text], [(c, c) for c in plain.text]
    index = first_divergence(a, b)
    entry: dict[str, Any] = {
        "prompt": drafted.prompt, "identical": index is None,
        "tokens_drafted": len(a), "tokens_plain": len(b),
        "generated_drafted": drafted.generated, "generated_plain": plain.generated,
        "capped": drafted.capped or plain.capped,
    }  # fmt: skip
    if index is not None:
        entry["divergence"] = {
            "index": index,
            "before": _text(a[max(0, index - CONTEXT_TOKENS) : index]),
            "drafted": _text(a[index : index + CONTEXT_TOKENS]),
            "plain": _text(b[index : index + CONTEXT_TOKENS]),
        }
    return entry


def _text(tokens: Tokens) -> list[str]:
    return [piece for _, piece in tokens]
