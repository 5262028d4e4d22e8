"""The metric catalogue: every metric SparkDash shows, declared once.

A declaration says what a figure is called (a translatable label), its unit, how it is shown
(scale and digits), what it means in one line, which direction is better, and how it gathers
over a run's requests and over several runs. The run page, the runs list, the results table,
compare, scorecards, sweep grids, alerts, exports, GET /metrics and the browser's live view all
read it from here (the browser through JSON rendered from it). The metrics every job
kind or traffic shares are declared here; a job kind declares its own from its folder
(runs/core/jobs/<kind>/kind.py, with `declare_all`), so that whatever reads the catalogue for job
figures imports runs.core.registry first (the forms, pages and workers do). The section "The
metric catalogue" of docs/metrics.md is generated from both (`python -m runs.core.registry`; a
test holds the two equal). A new metric is one `declare` plus the code that computes it.
Plain Python, no Django.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from measure.words import gettext_noop as _

__all__ = [
    "ACCEPTANCE_BY_POSITION", "ACCEPTANCE_RATE", "ACCEPTANCE_RATE_PER_REQUEST", "CATALOG", "LOG_ACCEPTANCE",
    "PER_REQUEST", "POOLED", "TOKENS_PER_VERIFICATION", "TOKENS_PER_VERIFICATION_PER_REQUEST", "Metric",
    "declare", "declare_all", "forget", "get", "markdown_table",
]

# The keys code names speculative decoding's figures by, written here once (measure.pooled computes them).
ACCEPTANCE_RATE = "acceptance_rate"
TOKENS_PER_VERIFICATION = "tokens_per_verification"
POOLED = (ACCEPTANCE_RATE, TOKENS_PER_VERIFICATION)  # the figures pooled over a run's drafting requests
PER_REQUEST = "_per_request"  # the suffix of a pooled figure's spread over requests
ACCEPTANCE_RATE_PER_REQUEST = ACCEPTANCE_RATE + PER_REQUEST
TOKENS_PER_VERIFICATION_PER_REQUEST = TOKENS_PER_VERIFICATION + PER_REQUEST
LOG_ACCEPTANCE = "log_acceptance"
# One share per draft position: a list, shown by the run page's positions figure, not one declaration.
ACCEPTANCE_BY_POSITION = "acceptance_by_position"

# How a figure gathers over one run's requests: their median with its spread ("median"), one
# ratio of the run's totals ("pooled"), or one value per run ("value").
OverRequests = Literal["median", "pooled", "value"]
# How a figure gathers over several runs (compare, scorecards, grids): the runs' median, or a
# count of the runs for which it holds ("count": shown "k of n runs").
OverRuns = Literal["median", "count"]
Better = Literal["higher", "lower", ""]


@dataclass(frozen=True)
class Metric:
    """One metric: its summary key, label, unit, display, one-line definition and direction."""

    key: str
    label: str
    unit: str
    definition: str
    better: Better = "higher"
    scale: float = 1.0
    digits: int = 1
    over_requests: OverRequests = "median"
    over_runs: OverRuns = "median"
    column: bool = False  # a column of its own in the results table
    # The values the figure can take at all (in its stored unit, before `scale`); None: no limit
    # on that side. A figure outside them is impossible, not a bad result: an imported file that
    # states one is refused (runs.core.imports.checks).
    low: float | None = None
    high: float | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.better == "higher"

    def allows(self, value: float) -> bool:
        """Whether `value` is a finite number inside the metric's limits."""
        return (math.isfinite(value) and (self.low is None or value >= self.low)
                and (self.high is None or value <= self.high))

    def limits_text(self) -> str:
        """The limits as docs/metrics.md shows them: "0 to 1", "at least 0", "" for none."""
        if self.low is not None and self.high is not None:
            return f"{self.low:g} to {self.high:g}"
        if self.low is not None:
            return f"at least {self.low:g}"
        return f"at most {self.high:g}" if self.high is not None else ""

    def as_json(self) -> dict[str, Any]:
        """What the browser reads of it (the label still English: the page translates it)."""
        return asdict(self)


CATALOG: dict[str, Metric] = {}


def declare(metric: Metric) -> Metric:
    """Adds `metric` to the catalogue; a key already declared differently is refused."""
    known = CATALOG.get(metric.key)
    if known is not None and known != metric:
        raise ValueError(f"metric {metric.key!r} is already declared, differently")
    CATALOG[metric.key] = metric
    return metric


def forget(key: str) -> None:
    """Takes a metric out of the catalogue (for a test's own declaration)."""
    CATALOG.pop(key, None)


def get(key: str) -> Metric:
    """The declaration of `key`; a KeyError names a metric nobody declared."""
    try:
        return CATALOG[key]
    except KeyError:
        raise KeyError(f"metric {key!r} is not declared in measure.catalog") from None


def declare_all(*metrics: Metric) -> None:
    """Adds each of `metrics` to the catalogue, as `declare` does (a job kind's, from its folder)."""
    for metric in metrics:
        declare(metric)


declare_all(
    # Per request, shown as the median over the run's requests with its spread.
    Metric(
        "ttft_s",
        _("TTFT"),
        "s",
        "sending the request to its first streamed token, by SparkDash's clock",
        "lower",
        digits=3,
        column=True,
        low=0.0,
    ),
    Metric(
        "ttft_engine_s",
        _("TTFT (engine)"),
        "s",
        "the engine's own prompt-processing time, where it reports one",
        "lower",
        digits=3,
        low=0.0,
    ),
    Metric(
        "decode_tps_client",
        _("decode (client)"),
        "tok/s",
        "output tokens after the first / the time from the first to the last token, by SparkDash's clock",
        column=True,
        low=0.0,
    ),
    Metric(
        "decode_tps_engine",
        _("decode (engine)"),
        "tok/s",
        "the engine's own generation speed, where it reports one",
        low=0.0,
    ),
    Metric(
        "prefill_tps",
        _("prefill"),
        "tok/s",
        "prompt tokens / the engine's prompt-processing time",
        digits=0,
        column=True,
        low=0.0,
    ),
    Metric("e2e_s", _("E2E"), "s", "sending the request to its last token", "lower", digits=2, low=0.0),
    # Read from other tools' result files (runs.core.imports): figures SparkDash itself reads as
    # decode (client), declared so an imported run shows them under one definition.
    Metric(
        "tpot_s",
        _("TPOT"),
        "ms",
        "time per output token after the first: (E2E - TTFT) / (output tokens - 1), per request",
        "lower",
        scale=1000,
        digits=1,
        low=0.0,
    ),
    Metric(
        "itl_s",
        _("ITL"),
        "ms",
        "inter-token latency: the gaps between streamed chunks, over every request's gaps",
        "lower",
        scale=1000,
        digits=1,
        low=0.0,
    ),
    Metric(
        "ttfr_s",
        _("TTFR (first reasoning token)"),
        "s",
        "sending the request to its first reasoning token",
        "lower",
        digits=3,
        low=0.0,
    ),
    Metric(
        "ttfo_s",
        _("TTFO (first answer token)"),
        "s",
        "sending the request to its first answer token, after any reasoning",
        "lower",
        digits=3,
        low=0.0,
    ),
    Metric(
        "reasoning_tokens",
        _("reasoning tokens"),
        "tokens",
        "tokens of reasoning before the answer",
        "",
        digits=0,
        low=0.0,
    ),
    Metric(
        "answer_tokens",
        _("answer tokens"),
        "tokens",
        "tokens of the answer, after any reasoning",
        "",
        digits=0,
        low=0.0,
    ),
    Metric(
        "decode_tps_answer",
        _("decode (answer tokens)"),
        "tok/s",
        "answer tokens / the time from the first to the last answer token",
        low=0.0,
    ),
    # Acceptance: pooled over the run is the headline; the requests' own ratios are secondary.
    Metric(
        ACCEPTANCE_RATE,
        _("acceptance rate"),
        "%",
        "pooled over the run: accepted draft tokens / drafted tokens, by the engine's counters where it "
        "has them",
        scale=100,
        over_requests="pooled",
        column=True,
        low=0.0,
        high=1.0,
    ),
    Metric(
        TOKENS_PER_VERIFICATION,
        _("tokens per verification"),
        "tokens",
        "pooled over the run: (accepted draft tokens + verifications) / verifications",
        digits=2,
        over_requests="pooled",
        column=True,
        low=1.0,
    ),
    Metric(
        ACCEPTANCE_RATE_PER_REQUEST,
        _("acceptance rate, spread over requests"),
        "%",
        "each request's own accepted / drafted tokens; secondary, never the headline",
        scale=100,
        low=0.0,
        high=1.0,
    ),
    Metric(
        TOKENS_PER_VERIFICATION_PER_REQUEST,
        _("tokens per verification, spread over requests"),
        "tokens",
        "each request's own tokens per verification; secondary, never the headline",
        digits=2,
        low=1.0,
    ),
    Metric(
        LOG_ACCEPTANCE,
        _("acceptance (engine log)"),
        "%",
        "accepted / drafted tokens summed over the engine log's draft lines, warm-up included; shown "
        "among a run's counters, and an Ollama run's pooled acceptance (source log)",
        scale=100,
        over_requests="pooled",
        low=0.0,
        high=1.0,
    ),
    # Load, energy and the machine.
    Metric(
        "total_tps",
        _("total tok/s of the box"),
        "tok/s",
        "output tokens of every answer at one load "
        "level / the time from the first request sent to the last token",
        column=True,
        low=0.0,
    ),
    Metric(
        "finish_s",
        _("time to finish per answer"),
        "s",
        "one answer's time from sent to last token at one load level",
        "lower",
        digits=2,
        low=0.0,
    ),
    Metric(
        "j_per_token",
        _("energy per output token"),
        "J",
        "the machine's energy over the run / its output tokens, where power was read",
        "lower",
        digits=3,
        over_requests="value",
        column=True,
        low=0.0,
    ),
    Metric(
        "bandwidth_gbps",
        _("measured memory bandwidth"),
        "GB/s",
        "bytes copied / copy time, the median over passes",
        over_requests="value",
        low=0.0,
    ),
)


def markdown_table() -> str:
    """The catalogue as docs/metrics.md's generated section shows it, one row per metric."""
    lines = [
        "| key | label | unit | better | over requests | over runs | limits | definition |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in CATALOG.values():
        better = m.better or "neither"
        lines.append(
            f"| `{m.key}` | {m.label} | {m.unit or '-'} | {better} | {m.over_requests} | "
            f"{m.over_runs} | {m.limits_text() or '-'} | {m.definition} |"
        )
    return "\n".join(lines) + "\n"

