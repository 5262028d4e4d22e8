"""Prometheus `/metrics` text from an engine: flat samples, and speculative-decoding deltas.

No Django import, no I/O: the caller fetches `/metrics` before and after a run and hands the two
texts (or parsed dicts) here. Names are llama.cpp's (`tools/server/server-task.cpp` `to_metrics`)
and vLLM's (`vllm/v1/spec_decode/metrics.py`); what they feed is in docs/metrics.md, "Engine counters".
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from engines.clients.base import EngineError

__all__ = ["LLAMACPP", "VLLM", "SpecDelta", "parse_metrics", "sample_key", "spec_decode_delta"]

LLAMACPP = "llamacpp:"
VLLM = "vllm:"
# Counter names after the prefix; prometheus_client (vLLM) and llama.cpp both end counters in _total.
DRAFTS = "spec_decode_num_drafts_total"  # verification steps
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"

Samples = Mapping[str, float]


def sample_key(name: str, labels: Mapping[str, str]) -> str:
    """The dict key for one sample: `name` alone, or `name{a="1",b="2"}` with labels sorted."""
    if not labels:
        return name
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def parse_metrics(text: str) -> dict[str, float]:
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


@dataclass(frozen=True)
class SpecDelta:
    """Speculative-decoding counts accumulated between two `/metrics` snapshots."""

    drafts: int  # verification steps that checked a draft
    draft_tokens: int  # tokens drafted
    accepted: int  # drafted tokens the target model accepted

    @property
    def acceptance_rate(self) -> float | None:
        """The acceptance rate: accepted / drafted tokens; None when nothing was drafted."""
        return self.accepted / self.draft_tokens if self.draft_tokens else None

    @property
    def tokens_per_verification(self) -> float | None:
        """L = 1 + accepted / verification steps (the bonus token included); None with no steps."""
        return 1 + self.accepted / self.drafts if self.drafts else None


def spec_decode_delta(
    before: Samples | str, after: Samples | str, prefix: str = LLAMACPP
) -> SpecDelta | None:
    """The speculative counts the engine added between `before` and `after`.

    :param before: the `/metrics` snapshot taken before the run, as text or `parse_metrics` output.
    :param after: the snapshot taken after it (llama.cpp flushes counters when the slot resets,
        so poll until they settle).
    :param prefix: the engine kind's `metrics_prefix` (engines.kinds): `LLAMACPP` ("llamacpp:") or
        `VLLM` ("vllm:"); samples are summed over label sets.
    :return: None when `after` has no speculative counters (llama.cpp before b10282, or no draft
        configured in vLLM).
    """
    before = parse_metrics(before) if isinstance(before, str) else before
    after = parse_metrics(after) if isinstance(after, str) else after
    if _total(after, prefix + DRAFTS) is None:
        return None
    drafts, draft_tokens, accepted = (
        _counter_delta(before, after, prefix + name) for name in (DRAFTS, DRAFT_TOKENS, ACCEPTED)
    )
    return SpecDelta(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted)


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
