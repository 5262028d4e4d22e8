"""Reasoning ("thinking") inside a streamed answer's content: `<think>...</think>` split out.

A model served without a reasoning parser streams its reasoning as ordinary content between
<think> and </think>, and a tag may be split across chunks. ThinkSplitter holds back only the
characters that may still turn out to be a tag, so every other piece keeps its arrival time.
The tags stay with the reasoning: they are tokens the model generated, but not the answer.
"""
from __future__ import annotations

from engines.clients.chunk import Chunk

__all__ = ["CLOSE", "OPEN", "ThinkSplitter", "split_unopened"]

OPEN, CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Turns content pieces into answer and reasoning Chunks; reasoning only when the content
    starts (after blank space) with <think>, as reasoning models do."""

    def __init__(self) -> None:
        self.state = "start"  # "start": nothing but blank space yet; then "think" or "answer"
        self.pending = ""
        self.since = 0.0  # when the held-back text began to arrive

    def feed(self, t: float, text: str) -> list[Chunk]:
        """The chunks `text` (arrived at t) completes; a possible partial tag is kept back.

        The first chunk made from held-back text keeps the time that text arrived.
        """
        if self.state == "answer" and not self.pending:  # past any reasoning: every piece as it comes
            return [Chunk(t, text)] if text else []
        since = self.since if self.pending else t
        out = self._split(t, text)
        if out and since != t:
            out[0] = Chunk(since, out[0].text, out[0].reasoning)
        self.since = t if out else since
        return out

    def _split(self, t: float, text: str) -> list[Chunk]:
        self.pending += text
        out: list[Chunk] = []
        while self.pending:
            if self.state == "start" and not self._start(t, out):
                break
            if self.state == "think":
                self._think(t, out)
                if self.state == "think":
                    break
            if self.state == "answer" and self.pending:
                out.append(Chunk(t, self.pending))
                self.pending = ""
        return out

    def finish(self, t: float) -> list[Chunk]:
        """What is still held back when the content ends (an unclosed reasoning stays reasoning)."""
        text, self.pending = self.pending, ""
        return [Chunk(self.since, text, reasoning=self.state == "think")] if text else []

    def _start(self, t: float, out: list[Chunk]) -> bool:
        """Decide whether the content opens with <think>; False while it cannot be told yet."""
        stripped = self.pending.lstrip()
        if stripped.startswith(OPEN):
            cut = len(self.pending) - len(stripped) + len(OPEN)
            out.append(Chunk(t, self.pending[:cut], reasoning=True))
            self.pending, self.state = self.pending[cut:], "think"
            return True
        if OPEN.startswith(stripped):
            return False
        self.state = "answer"
        return True

    def _think(self, t: float, out: list[Chunk]) -> None:
        end = self.pending.find(CLOSE)
        if end >= 0:
            cut = end + len(CLOSE)
            out.append(Chunk(t, self.pending[:cut], reasoning=True))
            self.pending, self.state = self.pending[cut:], "answer"
            return
        keep = _partial_tag(self.pending, CLOSE)
        if len(self.pending) > keep:
            out.append(Chunk(t, self.pending[: len(self.pending) - keep], reasoning=True))
            self.pending = self.pending[len(self.pending) - keep :]


def _partial_tag(text: str, tag: str) -> int:
    """The length of the longest end of `text` that is a start of `tag` (0 when none)."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


def split_unopened(chunks: list[Chunk]) -> list[Chunk]:
    """Chunks whose answer holds a </think> never opened, with everything up to it as reasoning.

    A chat template that opens <think> itself (in the prompt, as DeepSeek-R1's and Qwen3's
    thinking models do) leaves the stream only the closing tag. This is known only once the
    tag arrives, so it is applied to a whole reply; a reply that streamed reasoning is left alone.
    """
    if any(c.reasoning for c in chunks):
        return chunks
    text = "".join(c.text for c in chunks)
    end = text.find(CLOSE)
    if end < 0 or OPEN in text[:end]:
        return chunks
    cut, out, seen = end + len(CLOSE), [], 0
    for chunk in chunks:
        before = max(min(cut - seen, len(chunk.text)), 0)
        if before:
            out.append(Chunk(chunk.t, chunk.text[:before], reasoning=True))
        if before < len(chunk.text):
            out.append(Chunk(chunk.t, chunk.text[before:]))
        seen += len(chunk.text)
    return out
