"""The engine's counters as Prometheus text (its `/metrics`): samples, and speculative-decoding deltas.

No Django import, no I/O: the caller fetches `/metrics` before and after a run and hands the two
texts (or parsed dicts) here. Names are llama.cpp's (`tools/server/server-task.cpp` `to_metrics`)
and vLLM's (`vllm/v1/spec_decode/metrics.py`); what they feed is in docs/metrics.md, "Engine counters".
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from engines.errors import EngineError
from measure import pooled
from measure.catalog import ACCEPTANCE_BY_POSITION, ACCEPTANCE_RATE, TOKENS_PER_VERIFICATION

__all__ = [
    "LLAMACPP",
    "VLLM",
    "RequestDelta",
    "SpecDelta",
    "engine_samples",
    "parse_counters",
    "request_delta",
    "sample_key",
    "spec_decode_delta",
    "startup_phases",
]

LLAMACPP = "llamacpp:"
VLLM = "vllm:"
# Counter names after the prefix; prometheus_client (vLLM) and llama.cpp both end counters in _total.
DRAFTS = "spec_decode_num_drafts_total"  # verification steps
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"  # label position="0", "1", ...
_POSITION = re.compile(r'[{,]position="(\d+)"')
# vLLM's request counters and histograms (vllm/v1/metrics/loggers.py); llama.cpp has no such set.
GENERATED = "generation_tokens_total"
PROMPT = "prompt_tokens_total"
CACHED = "prompt_tokens_cached_total"
FINISHED = "e2e_request_latency_seconds_count"
DECODE_S = "request_decode_time_seconds_sum"
PREFILL_S = "request_prefill_time_seconds_sum"
TTFT_S = "time_to_first_token_seconds_sum"

Samples = Mapping[str, float]


def sample_key(name: str, labels: Mapping[str, str]) -> str:
    """The dict key for one sample: `name` alone, or `name{a="1",b="2"}` with labels sorted."""
    if not labels:
        return name
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def parse_counters(text: str) -> dict[str, float]:
    """Every sample in a Prometheus text exposition, keyed by `sample_key`.

    Raises EngineError when the text is not Prometheus exposition.
    """
    try:
        return {
            sample_key(sample.name, sample.labels): float(sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }
    except ValueError as exc:
        raise EngineError(f"malformed /metrics text ({exc}): {text[:100]!r}") from None


def engine_samples(samples: Samples, prefix: str) -> dict[str, float]:
    """The samples the engine itself exports (names under `prefix`).

    A Python engine (vLLM, SGLang) also exports its process's CPU time, memory and garbage
    collection, which move with every read of /metrics: only the engine's own say it settled.
    """
    return {key: value for key, value in samples.items() if key.startswith(prefix)}


@dataclass(frozen=True)
class SpecDelta:
    """Speculative-decoding counts accumulated between two `/metrics` snapshots."""

    drafts: int  # verification steps that checked a draft
    draft_tokens: int  # tokens drafted
    accepted: int  # drafted tokens the target model accepted
    # accepted_by_position[i]: drafts whose token at position i was accepted (empty: not exposed)
    accepted_by_position: tuple[int, ...] = field(default=())

    @property
    def acceptance_rate(self) -> float | None:
        """The acceptance over these counts (measure.pooled); None when nothing was drafted."""
        return pooled.acceptance(self.accepted, self.draft_tokens)

    @property
    def tokens_per_verification(self) -> float | None:
        """Tokens per verification over these counts (measure.pooled); None with no verifications."""
        return pooled.tokens_per_verification(self.accepted, self.drafts)

    @property
    def acceptance_by_position(self) -> list[float] | None:
        """Per draft position i: the share of drafts whose i-th token was accepted (measure.pooled)."""
        return pooled.acceptance_by_position(self.accepted_by_position, self.drafts)

    def summary(self) -> dict[str, Any] | None:
        """The run-summary form (counts and rates); None when nothing was drafted."""
        if not self.drafts:
            return None
        return {
            "drafts": self.drafts,
            pooled.DRAFT_TOKENS: self.draft_tokens,
            "accepted": self.accepted,
            ACCEPTANCE_RATE: self.acceptance_rate,
            TOKENS_PER_VERIFICATION: self.tokens_per_verification,
            pooled.ACCEPTED_BY_POSITION: list(self.accepted_by_position) or None,
            ACCEPTANCE_BY_POSITION: self.acceptance_by_position,
        }


def spec_decode_delta(
    before: Samples | str, after: Samples | str, prefix: str = LLAMACPP
) -> SpecDelta | None:
    """The speculative counts the engine added between `before` and `after`.

    :param before: the `/metrics` snapshot taken before the run, as text or `parse_counters` output.
    :param after: the snapshot taken after it (llama.cpp flushes counters when the slot resets,
        so poll until they settle).
    :param prefix: the engine kind's `counters_prefix` (engines.kinds): `LLAMACPP` ("llamacpp:") or
        `VLLM` ("vllm:"); samples are summed over label sets.
    :return: None when `after` has no speculative counters (llama.cpp before b10282, or no draft
        configured in vLLM).
    """
    before = parse_counters(before) if isinstance(before, str) else before
    after = parse_counters(after) if isinstance(after, str) else after
    if _total(after, prefix + DRAFTS) is None:
        return None
    drafts, draft_tokens, accepted = (
        _counter_delta(before, after, prefix + name) for name in (DRAFTS, DRAFT_TOKENS, ACCEPTED)
    )
    by_position = _position_deltas(before, after, prefix + PER_POSITION)
    return SpecDelta(drafts, draft_tokens, accepted, by_position)


@dataclass(frozen=True)
class RequestDelta:
    """What vLLM's request counters and histograms added between two snapshots.

    For one request alone between the snapshots, these are that request's own figures: vLLM's
    replies carry no timings, so its side of a request is read from `/metrics`.
    """

    finished: int  # requests that ended
    generated: int  # output tokens
    prompt_tokens: int
    cached_tokens: int | None  # None: the engine exports no cached-prompt counter
    decode_s: float  # first token to last, summed over requests
    prefill_s: float
    ttft_s: float  # arrival to first token, summed over requests


def request_delta(before: Samples | str, after: Samples | str, prefix: str = VLLM) -> RequestDelta | None:
    """The request figures added between `before` and `after`; None when `after` has no such counters."""
    before = parse_counters(before) if isinstance(before, str) else before
    after = parse_counters(after) if isinstance(after, str) else after
    if _total(after, prefix + FINISHED) is None or _total(after, prefix + DECODE_S) is None:
        return None

    def delta(name: str) -> float:
        start, end = _total(before, prefix + name) or 0.0, _total(after, prefix + name) or 0.0
        return end - start if end >= start else end

    cached = delta(CACHED) if _total(after, prefix + CACHED) is not None else None
    return RequestDelta(
        finished=round(delta(FINISHED)), generated=round(delta(GENERATED)),
        prompt_tokens=round(delta(PROMPT)), cached_tokens=None if cached is None else round(cached),
        decode_s=delta(DECODE_S), prefill_s=delta(PREFILL_S), ttft_s=delta(TTFT_S),
    )  # fmt: skip


def _position_deltas(before: Samples, after: Samples, name: str) -> tuple[int, ...]:
    """Per position label, the counter's delta summed over its other labels, in position order."""
    ends, starts = _by_position(after, name), _by_position(before, name)
    deltas = []
    for position in range(len(ends)):
        end, start = ends.get(position, 0.0), starts.get(position, 0.0)
        deltas.append(round(end - start if end >= start else end))
    return tuple(deltas) if len(ends) == max(ends, default=-1) + 1 else ()


def _by_position(samples: Samples, name: str) -> dict[int, float]:
    totals: dict[int, float] = {}
    for key, value in samples.items():
        if key.startswith(name + "{") and (match := _POSITION.search(key)):
            position = int(match.group(1))
            totals[position] = totals.get(position, 0.0) + value
    return totals


def _counter_delta(before: Samples, after: Samples, name: str) -> int:
    # llama.cpp writes counters with C++'s default 6 significant digits ("1.23457e+06"), so past
    # a million the delta is only as exact as that; runs that long need a fresh engine to be exact.
    start, end = _total(before, name) or 0.0, _total(after, name) or 0.0
    # A counter that went down was reset (the engine restarted): count from zero, as Prometheus does.
    return round(end - start if end >= start else end)


def _total(samples: Samples, name: str) -> float | None:
    """The sum of `name` over all its label sets; None when no sample has that name."""
    values = [v for key, v in samples.items() if key == name or key.startswith(name + "{")]
    return sum(values) if values else None


_PHASE = re.compile(r'[{,]phase="([^"]+)"')


def startup_phases(text: str, name: str) -> dict[str, float]:
    """Seconds per start-up phase from a gauge labelled `phase` (SGLang's
    ``sglang:startup_time_seconds``: load_weight, kv_cache_allocation, ...); {} when it is absent."""
    phases: dict[str, float] = {}
    for key, value in parse_counters(text).items():
        found = _PHASE.search(key) if key.startswith(name + "{") else None
        if found:
            phases[found.group(1)] = value
    return phases
