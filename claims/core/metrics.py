"""The metrics a claim may state, each read with the definition of a metric in the catalogue.

A claim's metric names are the words published figures use (``decode_tps``, ``ttft_ms``); each
maps onto one catalogue metric (measure.catalog) and the job kind whose runs measure it: decode
per stream, TTFT and prefill at a concurrency level and the box's total at it come from a
concurrency sweep's level (runs.core.jobs.concurrency), whose prompts have the claim's length where
it states one; speculative decoding's pooled figures come from a speed run (runs.core.jobs.speed).
``scale`` turns the catalogue's unit into the claim's (TTFT is stored in seconds, claimed in
milliseconds). Plain Python, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from measure import catalog

__all__ = ["CLAIM_METRICS", "DECODE_METRICS", "ClaimMetric", "Scope", "metric"]

Scope = Literal["per-stream", "aggregate", "run"]


@dataclass(frozen=True)
class ClaimMetric:
    """One metric a claim may state.

    :param key: the claim file's name for it.
    :param catalog_key: the catalogue metric whose definition it is read with.
    :param job: the job kind whose runs measure it ("concurrency" per level, "speed" at level 1).
    :param scale: claim unit = catalogue unit x scale.
    :param higher_is_better: for the words of a verdict (lower/higher are always of the value).
    """

    key: str
    catalog_key: str
    unit: str
    scope: Scope
    job: Literal["concurrency", "speed"]
    scale: float = 1.0

    @property
    def definition(self) -> str:
        """The catalogue's one-line definition of what is measured."""
        found = catalog.CATALOG.get(self.catalog_key)
        return found.definition if found else ""


CLAIM_METRICS: dict[str, ClaimMetric] = {
    m.key: m
    for m in (
        ClaimMetric("decode_tps", "decode_tps_client", "tok/s", "per-stream", "concurrency"),
        ClaimMetric("decode_tps_total", "total_tps", "tok/s", "aggregate", "concurrency"),
        ClaimMetric("ttft_ms", "ttft_s", "ms", "per-stream", "concurrency", scale=1000.0),
        ClaimMetric("prefill_tps", "prefill_tps", "tok/s", "per-stream", "concurrency"),
        ClaimMetric(catalog.ACCEPTANCE_RATE, catalog.ACCEPTANCE_RATE, "fraction", "run", "speed"),
        ClaimMetric(
            catalog.TOKENS_PER_VERIFICATION, catalog.TOKENS_PER_VERIFICATION, "tokens", "run", "speed"
        ),
    )
}

# The decode figures a roofline bounds: per stream only (an aggregate over c streams reads the
# weights once per step for all of them, so the per-stream ceiling does not bound it).
DECODE_METRICS = frozenset({"decode_tps"})


def metric(key: str) -> ClaimMetric:
    """The claim metric named ``key``; KeyError for a name no claim may use."""
    return CLAIM_METRICS[key]
