"""The simulated engine's timing model: a profile, and when each token of a reply comes out.

Pure and deterministic (no I/O, no clock): the same profile, length, seed and output type
always give the same emissions, so tests and demos can compare measured figures with exact
expected ones.

Acceptance follows the field reports: drafts hit often on structured output and rarely on free
prose. Unless one rate is pinned (``acceptance``), draft position i of a request of output type
t is accepted with probability ``acceptance_by_type[t] * acceptance_decay ** i`` (given the
positions before it were), so a longer lookahead drafts more tokens that are thrown away.
Each verification's accepted count is drawn by inverse CDF from one uniform number of a
seeded golden-ratio sequence: the same distribution as a coin per position, but a reply of a
few dozen tokens already averages close to the expected figures.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from .reasoning import MIN_TAGGED, REASONING_STYLES

__all__ = [
    "ACCEPTANCE_BY_TYPE", "FAULTS", "OUTPUT_TYPES", "Emission", "Schedule", "SimProfile", "plan", "schedule",
]

FAULTS = ("http-500", "malformed", "cut", "hang")
DEFAULT_DECODE_TPS = 40.0
OUTPUT_TYPES = ("tool-call", "table", "prose-en", "prose-ja")
# First-position acceptance per output type: tool calls and tables repeat what the prompt holds,
# English prose is half guessable, Japanese prose almost never (seed: 7.7 tok/s drafting vs 7.9).
ACCEPTANCE_BY_TYPE = {"tool-call": 0.95, "table": 0.92, "prose-en": 0.55, "prose-ja": 0.1}
# With these and a draft token at 0.012 of a target pass, structured output decodes fastest at
# lookahead 8 and Japanese prose stays within a few percent of no drafting at every length.
DEFAULT_DECAY = 0.9
DEFAULT_DRAFT_COST = 0.012
_GOLDEN = (5**0.5 - 1) / 2


@dataclass(frozen=True)
class SimProfile:
    """How the simulated box behaves.

    :param decode_tps: plain decoding speed, one token per target forward pass; when None it is
        efficiency * bandwidth_gbps / model_gb if both are given, else 40.
    :param ttft_ms: time from request arrival to the first token (prefill).
    :param acceptance: when set, one rate for every draft position of every output type;
        None (the default) uses acceptance_by_type and acceptance_decay.
    :param acceptance_by_type: output type -> acceptance of the first draft position.
    :param acceptance_decay: each later draft position's acceptance is this times the one before.
    :param lookahead: draft tokens per verification; 0 turns speculative decoding off.
    :param draft_cost: time of one draft token relative to one target forward pass.
    :param efficiency: the share of the bandwidth ceiling reached when decode_tps is derived
        from bandwidth_gbps and model_gb (the seed's 27B measured 7.9 of 9.5 tok/s: 0.83).
    :param default_max_tokens: reply length when the request sets no limit.
    :param fault: None or one of FAULTS; fault_after is the tokens streamed before it strikes.
    :param fault_every: with a fault, every fault_every-th generation request (the k-th, 2k-th, ...,
        counted from the server's start) gets it and the others are answered; 1: every request.
    :param batch_cost: with n requests in flight at once, each decode step takes
        1 + batch_cost * (n - 1) times as long (0.2: 16 streams give ~4x the total throughput).
    :param prefill_tps: when set, the prompt cache is modelled and the first token comes
        ttft_ms + new prompt tokens / prefill_tps after arrival; None keeps TTFT at ttft_ms.
    :param cache_tokens: the RAM prompt cache's limit in tokens (None: unlimited, 0: off).
    :param reasoning_tokens: tokens of reasoning ("thinking") streamed before each answer, unless
        the request turns thinking off; they count toward the request's token limit, and a reply
        with no limit is default_max_tokens of answer after them. 0: no reasoning.
    :param reasoning_style: "field" (a reasoning_content / thinking field, counted in the usage)
        or "tags" (<think>...</think> in the content, as from a model served without a parser).
    :param lossy_drafter: a drafter that is NOT lossless: every n-th accepted draft token of a
        reply comes out as another word than plain decoding gives (0: off, the drafts are lossless).
    """

    decode_tps: float | None = None
    ttft_ms: float = 150.0
    acceptance: float | None = None
    acceptance_by_type: dict[str, float] = field(default_factory=lambda: dict(ACCEPTANCE_BY_TYPE))
    acceptance_decay: float = DEFAULT_DECAY
    lookahead: int = 0
    draft_cost: float = DEFAULT_DRAFT_COST
    efficiency: float = 1.0
    default_max_tokens: int = 128
    bandwidth_gbps: float | None = None
    model_gb: float | None = None
    model: str = "sparkdash-sim:8b"
    fault: str | None = None
    fault_after: int = 0
    fault_every: int = 1
    batch_cost: float = 0.2
    prefill_tps: float | None = None
    cache_tokens: int | None = None
    reasoning_tokens: int = 0
    reasoning_style: str = "field"
    lossy_drafter: int = 0

    def __post_init__(self) -> None:
        if self.decode_tps is None:
            bandwidth, size = self.bandwidth_gbps, self.model_gb
            tps = self.efficiency * bandwidth / size if bandwidth and size else DEFAULT_DECODE_TPS
            object.__setattr__(self, "decode_tps", tps)
        self._validate()

    def _validate(self) -> None:
        checks = {
            "decode_tps must be > 0": self.tps > 0,
            "ttft_ms must be >= 0": self.ttft_ms >= 0,
            "acceptance must be None or in [0, 1]": self.acceptance is None or 0 <= self.acceptance <= 1,
            f"acceptance_by_type must give each of {', '.join(OUTPUT_TYPES)} a rate in [0, 1]": (
                set(self.acceptance_by_type) == set(OUTPUT_TYPES)
                and all(0 <= rate <= 1 for rate in self.acceptance_by_type.values())
            ),
            "acceptance_decay must be in (0, 1]": 0 < self.acceptance_decay <= 1,
            "efficiency must be in (0, 1]": 0 < self.efficiency <= 1,
            "lookahead must be in 0..64": 0 <= self.lookahead <= 64,
            "draft_cost must be >= 0": self.draft_cost >= 0,
            "default_max_tokens must be >= 1": self.default_max_tokens >= 1,
            f"fault must be None or one of {FAULTS}": self.fault is None or self.fault in FAULTS,
            "fault_after must be >= 0": self.fault_after >= 0,
            "fault_every must be >= 1": self.fault_every >= 1,
            "batch_cost must be >= 0": self.batch_cost >= 0,
            "prefill_tps must be None or > 0": self.prefill_tps is None or self.prefill_tps > 0,
            "cache_tokens must be None or >= 0": self.cache_tokens is None or self.cache_tokens >= 0,
            "reasoning_tokens must be >= 0": self.reasoning_tokens >= 0,
            f"reasoning_style must be one of {REASONING_STYLES}": self.reasoning_style in REASONING_STYLES,
            f"reasoning_tokens must be 0 or >= {MIN_TAGGED} in the tags style": (
                self.reasoning_style != "tags" or self.reasoning_tokens == 0
                or self.reasoning_tokens >= MIN_TAGGED
            ),
            "lossy_drafter must be >= 0": self.lossy_drafter >= 0,
        }
        failed = [message for message, ok in checks.items() if not ok]
        if failed:
            raise ValueError("; ".join(failed))

    @property
    def tps(self) -> float:
        """decode_tps, resolved (never None after construction)."""
        assert self.decode_tps is not None
        return self.decode_tps

    def fault_of(self, request_number: int) -> str | None:
        """The fault the request_number-th generation request (from 1) gets, or None."""
        return self.fault if request_number % self.fault_every == 0 else None

    def position_rates(self, output_type: str) -> list[float]:
        """Acceptance of each draft position 0..lookahead-1 for a request of this output type."""
        if self.acceptance is not None:
            return [self.acceptance] * self.lookahead
        if output_type not in self.acceptance_by_type:
            raise ValueError(f"output_type must be one of {', '.join(OUTPUT_TYPES)}, not {output_type!r}")
        base = self.acceptance_by_type[output_type]
        return [base * self.acceptance_decay**i for i in range(self.lookahead)]


class Emission(NamedTuple):
    """One streamed chunk: when it leaves (seconds after the request arrived) and its tokens."""

    offset_s: float
    n_tokens: int


@dataclass(frozen=True)
class Schedule:
    """A reply's emissions plus the engine's own speculative counters."""

    emissions: list[Emission]
    draft_tokens: int = 0
    accepted_tokens: int = 0
    verifications: int = 0  # target forward passes that verified a non-empty draft
    # per draft position i, the verifications that accepted position i (docs/metrics.md)
    accepted_by_position: tuple[int, ...] = ()

    @property
    def n_tokens(self) -> int:
        return sum(e.n_tokens for e in self.emissions)

    def accepted_draft_tokens(self) -> list[int]:
        """The reply's token indices that were accepted draft tokens: each verification's chunk is
        its accepted drafts followed by the one token the target model computed itself."""
        indices: list[int] = []
        start = 1
        for emission in self.emissions[1:]:
            indices += range(start, start + emission.n_tokens - 1)
            start += emission.n_tokens
        return indices

    def lossy_tokens(self, every: int) -> frozenset[int]:
        """Every `every`-th accepted draft token (a lossy drafter's wrong tokens); none for 0."""
        if every <= 0:
            return frozenset()
        return frozenset(self.accepted_draft_tokens()[every - 1 :: every])

    @property
    def first_s(self) -> float:
        return self.emissions[0].offset_s

    @property
    def last_s(self) -> float:
        return self.emissions[-1].offset_s

    @property
    def decode_tps(self) -> float | None:
        """(tokens - 1) / (last - first), the client-side definition; None for one emission."""
        span = self.last_s - self.first_s
        return (self.n_tokens - 1) / span if span > 0 else None


def plan(
    profile: SimProfile, n_tokens: int, seed: int = 0, prefill_s: float = 0.0, output_type: str = "prose-en"
) -> Schedule:
    """Schedule a reply of exactly n_tokens tokens, with the engine's counters.

    The first token comes out of prefill at ttft_ms (plus prefill_s, the time spent on new
    prompt tokens when the prompt cache is modelled). Each later target forward pass verifies a
    draft of k = min(lookahead, tokens left - 1) tokens (a draft is never longer than what is
    still to be generated, as llama-server caps it) and emits accepted + 1 tokens as one chunk.
    The acceptance of each draft position comes from profile.position_rates(output_type).
    """
    if n_tokens < 1:
        raise ValueError("n_tokens must be >= 1")
    reach = _reach(profile.position_rates(output_type))
    draws = _draws(seed)
    t = profile.ttft_ms / 1000 + prefill_s
    emissions = [Emission(t, 1)]
    left = n_tokens - 1
    drafted = verifications = 0
    by_position = [0] * profile.lookahead
    while left > 0:
        k = min(profile.lookahead, left - 1)
        hits = _leading_accepted(next(draws), reach[:k]) if k else 0
        t += (1 + k * profile.draft_cost) / profile.tps
        emissions.append(Emission(t, hits + 1))
        left -= hits + 1
        drafted, verifications = drafted + k, verifications + (k > 0)
        for position in range(hits):
            by_position[position] += 1
    return Schedule(emissions, drafted, sum(by_position), verifications, tuple(by_position))


def schedule(
    profile: SimProfile, n_tokens: int, seed: int = 0, output_type: str = "prose-en"
) -> list[Emission]:
    """The emissions of plan(): (offset_s, n_tokens) pairs."""
    return plan(profile, n_tokens, seed, output_type=output_type).emissions


def _reach(rates: list[float]) -> list[float]:
    """P(at least j + 1 leading positions accepted) for each j: running products of the rates."""
    reach, p = [], 1.0
    for rate in rates:
        p *= rate
        reach.append(p)
    return reach


def _draws(seed: int) -> Iterator[float]:
    """Uniform numbers in [0, 1): a golden-ratio sequence from a seeded start (low discrepancy)."""
    u = random.Random(seed).random()
    while True:
        u = (u + _GOLDEN) % 1.0
        yield u


def _leading_accepted(u: float, reach: list[float]) -> int:
    """Draft positions accepted before the first rejection (verification stops there)."""
    return sum(1 for p in reach if u < p)
