"""The ratios of speculative decoding, each computed here and nowhere else (docs/metrics.md, Acceptance).

- acceptance = accepted draft tokens / drafted tokens;
- tokens per verification = (accepted draft tokens + verifications) / verifications;
- acceptance at draft position i = drafts whose i-th token was accepted / drafts (verifications).

Pooled over a run, the counts are summed first (over its requests, or the engine's counters over
the run) and divided once; one request's own ratio is the same function of its own counts. Every
caller (a request's figures, the run's pooled figures, the engine's counters, the engine log's
acceptance, the relay's statistics, the pages) calls these. Each gives None where its divisor is
zero or unknown, never a ZeroDivisionError. Plain Python, no Django.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "ACCEPTED_BY_POSITION",
    "ACCEPTED_TOKENS",
    "DRAFT_TOKENS",
    "VERIFICATIONS",
    "acceptance",
    "acceptance_by_position",
    "summed_positions",
    "tokens_per_verification",
]

# The counts the ratios are computed from, under the keys a request's row stores them with.
DRAFT_TOKENS = "draft_tokens"
ACCEPTED_TOKENS = "accepted_tokens"
VERIFICATIONS = "verifications"
ACCEPTED_BY_POSITION = "accepted_by_position"  # per draft position i: drafts whose i-th token was accepted


def acceptance(accepted: int | None, drafted: int | None) -> float | None:
    """Accepted draft tokens / drafted tokens; None when nothing was drafted or acceptance is unknown."""
    if not drafted or accepted is None:
        return None
    return accepted / drafted


def tokens_per_verification(accepted: int | None, verifications: int | None) -> float | None:
    """(accepted draft tokens + verifications) / verifications: how far one target-model step moves
    the answer, its own token included; None without verifications or an accepted count."""
    if not verifications or accepted is None:
        return None
    return (accepted + verifications) / verifications


def acceptance_by_position(
    accepted_by_position: Sequence[int] | None, drafts: int | None
) -> list[float] | None:
    """Per draft position i: the share of the `drafts` whose i-th token was accepted; None without
    drafts or per-position counts (an engine that does not expose them)."""
    if not drafts or not accepted_by_position:
        return None
    return [n / drafts for n in accepted_by_position]


def summed_positions(counts: Iterable[tuple[Sequence[int] | None, int | None]]) -> tuple[list[int], int]:
    """Per-position accepted counts and drafts summed over (accepted_by_position, drafts) pairs,
    leaving out a pair without either, for `acceptance_by_position` to pool."""
    accepted: list[int] = []
    drafts = 0
    for by_position, verifications in counts:
        if not by_position or not verifications:
            continue
        accepted += [0] * (len(by_position) - len(accepted))
        for i, n in enumerate(by_position):
            accepted[i] += n
        drafts += verifications
    return accepted, drafts
