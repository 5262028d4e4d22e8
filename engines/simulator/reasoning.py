"""The simulated model's reasoning ("thinking"): the first tokens of a reply, before its answer.

Every reasoning token is 4 characters, so the simulator's tokenizer (one token per 4 characters,
POST /tokenize) counts a streamed reasoning text as exactly the tokens it was. In the "tags"
style the reasoning sits in the content between <think> and </think>, each tag spread over two
tokens ("<thi" "nk>\\n" ... "</th" "ink>"), so clients meet tags split across chunks.
"""
from __future__ import annotations

__all__ = ["REASONING_STYLES", "reasoning_text", "split"]

# "field": a separate field (OpenAI API `reasoning_content`, Ollama `thinking`); "tags": in content.
REASONING_STYLES = ("field", "tags")
WORDS = (" hmm", " let", " see", " the", " ask", " now", " so,", " yes")
OPEN, CLOSE = ("<thi", "nk>\n"), ("</th", "ink>")
MIN_TAGGED = len(OPEN) + len(CLOSE)  # a tagged reasoning holds at least its two tags


def _token(i: int, total: int, style: str) -> str:
    if style == "tags":
        if i < len(OPEN):
            return OPEN[i]
        if i >= total - len(CLOSE):
            return CLOSE[i - (total - len(CLOSE))]
    return WORDS[i % len(WORDS)]


def reasoning_text(start: int, n: int, total: int, style: str) -> str:
    """Reasoning tokens start..start+n-1 of a reasoning `total` tokens long."""
    return "".join(_token(i, total, style) for i in range(start, start + n))


def split(start: int, n: int, reasoning_n: int) -> tuple[range, range]:
    """Reply tokens start..start+n-1 as (reasoning token indexes, answer token indexes)."""
    end = start + n
    cut = min(max(start, reasoning_n), end)
    return range(start, cut), range(cut - reasoning_n, end - reasoning_n)
