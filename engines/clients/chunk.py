"""One streamed piece of a reply, as every client and the reasoning splitter see it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    """One piece of streamed content, stamped with the client clock when it arrived."""

    t: float
    text: str
    reasoning: bool = False  # True for the model's reasoning ("thinking"), False for its answer
