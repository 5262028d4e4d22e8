"""The simulated engine's prompt cache: one slot's KV state plus a size-limited RAM cache.

Shaped like llama-server with one slot (Ollama runs it with -np 1): a request that continues
the slot's conversation reuses the slot directly; a request that does not makes the server
save the slot's state to the RAM cache (or drop it, logging "exceeds cache size limit", when it
is larger than the limit) and restore the best-matching saved state instead. The simulator's
tokenizer is one token per 4 characters, so a shared prefix of c characters is c // 4 tokens.
"""
from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "MIB_PER_TOKEN", "PromptCache", "common_tokens", "n_tokens", "tokenize"]

CHARS_PER_TOKEN = 4
# A saved state's size, for the log lines only: about 0.2 MiB per token puts llama-server's
# default 8 GiB limit near 40,000 tokens and 16 GiB near 80,000, as seen with a 27B model.
MIB_PER_TOKEN = 0.2
# The slot keeps its state when the new prompt reuses at least this share of it.
KEEP_SHARE = 0.5
VOCABULARY = 262_144  # token ids run 0..VOCABULARY-1 (Gemma 3's vocabulary size)


def n_tokens(text: str) -> int:
    """Tokens of a prompt as the simulator counts them (at least one)."""
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def tokenize(text: str, with_pieces: bool = False) -> list[Any]:
    """POST /tokenize's tokens: one per 4 characters, its id read from those characters (so two
    texts get the same ids exactly as far as their whole tokens agree); with_pieces as llama-server:
    [{"id": id, "piece": text}]."""
    pieces = [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)] or [""]
    ids = [zlib.crc32(piece.encode()) % VOCABULARY for piece in pieces]
    if with_pieces:
        return [{"id": i, "piece": piece} for i, piece in zip(ids, pieces, strict=True)]
    return ids


def common_tokens(a: str, b: str) -> int:
    """Whole tokens the two texts share from their start."""
    return _common_chars(a, b) // CHARS_PER_TOKEN


def _common_chars(a: str, b: str) -> int:
    # Binary search on slice equality: C-speed comparisons, fine for 200 KB conversations.
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class PromptCache:
    """The slot's state and the RAM cache of saved states, oldest first.

    :param limit_tokens: the RAM cache's size limit in tokens; None is unlimited, 0 turns it off.
    :param log: where the engine's log lines go (stderr, as llama-server writes them).
    """

    def __init__(self, limit_tokens: int | None, log: Callable[[str], None] = _stderr) -> None:
        self.limit = limit_tokens
        self.log = log
        self.slot = ""
        self.saved: list[str] = []

    def serve(self, prompt: str, answer: str) -> int:
        """Serve one request: how many of its prompt tokens come from cache.

        Afterwards the slot holds the prompt followed by the answer, as an engine's KV does.
        At least one prompt token is always computed, as in llama-server.
        """
        cached = common_tokens(self.slot, prompt)
        if self.slot and cached < KEEP_SHARE * n_tokens(self.slot):
            self._save(self.slot)
            cached = self._restore(prompt)
        self.slot = f"{prompt}\n{answer}"
        return min(cached, n_tokens(prompt) - 1)

    def _restore(self, prompt: str) -> int:
        """Take the saved state sharing the longest prefix with `prompt` out of RAM."""
        best = max(self.saved, key=lambda state: common_tokens(state, prompt), default="")
        cached = common_tokens(best, prompt)
        if cached:
            self.saved.remove(best)
        return cached

    def _save(self, state: str) -> None:
        if self.limit == 0:
            return
        size = n_tokens(state)
        if self.limit is not None and size > self.limit:
            self.log(
                f"srv  alloc:  - prompt state size {size * MIB_PER_TOKEN:.3f} MiB exceeds cache size "
                f"limit {self.limit * MIB_PER_TOKEN:.3f} MiB, skipping"
            )
            return
        # A saved state that is a prefix of this one is superseded by it.
        self.saved = [s for s in self.saved if not state.startswith(s)] + [state]
        while self.limit is not None and sum(n_tokens(s) for s in self.saved) > self.limit:
            dropped = self.saved.pop(0)
            self.log(
                "srv  alloc:  - making room for prompt cache entry, removing oldest entry "
                f"(size = {n_tokens(dropped) * MIB_PER_TOKEN:.3f} MiB)"
            )
