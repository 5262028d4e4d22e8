"""The simulated engine's timing model: a profile, and when each token of a reply comes out.

Pure and deterministic (no I/O, no clock): the same profile, length and seed always give the
same emissions, so tests and demos can compare measured figures with exact expected ones.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["FAULTS", "Emission", "Schedule", "SimProfile", "plan", "schedule"]

FAULTS = ("http-500", "malformed", "cut", "hang")
DEFAULT_DECODE_TPS = 40.0


@dataclass(frozen=True)
class SimProfile:
    """How the simulated box behaves.

    :param decode_tps: plain decoding speed, one token per target forward pass; when None it is
        bandwidth_gbps / model_gb if both are given, else 40.
    :param ttft_ms: time from request arrival to the first token (prefill).
    :param acceptance: probability that each draft position is accepted.
    :param lookahead: draft tokens per verification; 0 turns speculative decoding off.
    :param draft_cost: time of one draft token relative to one target forward pass.
    :param default_max_tokens: reply length when the request sets no limit.
    :param fault: None or one of FAULTS; fault_after is the tokens streamed before it strikes.
    :param batch_cost: with n requests in flight at once, each decode step takes
        1 + batch_cost * (n - 1) times as long (0.2: 16 streams give ~4x the total throughput).
    :param prefill_tps: when set, the prompt cache is modelled and the first token comes
        ttft_ms + new prompt tokens / prefill_tps after arrival; None keeps TTFT at ttft_ms.
    :param cache_tokens: the RAM prompt cache's limit in tokens (None: unlimited, 0: off).
    """

    decode_tps: float | None = None
    ttft_ms: float = 150.0
    acceptance: float = 0.7
    lookahead: int = 0
    draft_cost: float = 0.05
    default_max_tokens: int = 128
    bandwidth_gbps: float | None = None
    model_gb: float | None = None
    model: str = "sparkdash-sim:8b"
    fault: str | None = None
    fault_after: int = 0
    batch_cost: float = 0.2
    prefill_tps: float | None = None
    cache_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.decode_tps is None:
            bandwidth, size = self.bandwidth_gbps, self.model_gb
            tps = bandwidth / size if bandwidth and size else DEFAULT_DECODE_TPS
            object.__setattr__(self, "decode_tps", tps)
        self._validate()

    def _validate(self) -> None:
        checks = {
            "decode_tps must be > 0": self.tps > 0,
            "ttft_ms must be >= 0": self.ttft_ms >= 0,
            "acceptance must be in [0, 1]": 0 <= self.acceptance <= 1,
            "lookahead must be in 0..64": 0 <= self.lookahead <= 64,
            "draft_cost must be >= 0": self.draft_cost >= 0,
            "default_max_tokens must be >= 1": self.default_max_tokens >= 1,
            f"fault must be None or one of {FAULTS}": self.fault is None or self.fault in FAULTS,
            "fault_after must be >= 0": self.fault_after >= 0,
            "batch_cost must be >= 0": self.batch_cost >= 0,
            "prefill_tps must be None or > 0": self.prefill_tps is None or self.prefill_tps > 0,
            "cache_tokens must be None or >= 0": self.cache_tokens is None or self.cache_tokens >= 0,
        }
        failed = [message for message, ok in checks.items() if not ok]
        if failed:
            raise ValueError("; ".join(failed))

    @property
    def tps(self) -> float:
        """decode_tps, resolved (never None after construction)."""
        assert self.decode_tps is not None
        return self.decode_tps


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


def plan(profile: SimProfile, n_tokens: int, seed: int = 0, prefill_s: float = 0.0) -> Schedule:
    """Schedule a reply of exactly n_tokens tokens, with the engine's counters.

    The first token comes out of prefill at ttft_ms (plus prefill_s, the time spent on new
    prompt tokens when the prompt cache is modelled). Each later target forward pass verifies a
    draft of k = min(lookahead, tokens left - 1) tokens (a draft is never longer than what is
    still to be generated, as llama-server caps it) and emits accepted + 1 tokens as one chunk.
    """
    if n_tokens < 1:
        raise ValueError("n_tokens must be >= 1")
    rng = random.Random(seed)
    t = profile.ttft_ms / 1000 + prefill_s
    emissions = [Emission(t, 1)]
    left = n_tokens - 1
    drafted = verifications = 0
    by_position = [0] * profile.lookahead
    while left > 0:
        k = min(profile.lookahead, left - 1)
        hits = _leading_accepted(rng, k, profile.acceptance)
        t += (1 + k * profile.draft_cost) / profile.tps
        emissions.append(Emission(t, hits + 1))
        left -= hits + 1
        drafted, verifications = drafted + k, verifications + (k > 0)
        for position in range(hits):
            by_position[position] += 1
    return Schedule(emissions, drafted, sum(by_position), verifications, tuple(by_position))


def schedule(profile: SimProfile, n_tokens: int, seed: int = 0) -> list[Emission]:
    """The emissions of plan(): (offset_s, n_tokens) pairs."""
    return plan(profile, n_tokens, seed).emissions


def _leading_accepted(rng: random.Random, k: int, acceptance: float) -> int:
    """Draft positions accepted before the first rejection (verification stops there)."""
    n = 0
    while n < k and rng.random() < acceptance:
        n += 1
    return n
