"""The metric catalogue: every metric SparkDash shows, declared once.

A declaration says what a figure is called (a translatable label), its unit, how it is shown
(scale and digits), what it means in one line, which direction is better, and how it gathers
over a run's requests and over several runs. The run page, the runs list, the results table,
compare, scorecards, sweep grids, alerts, exports, GET /metrics and the browser's live view all
read it from here (the browser through JSON rendered from it). The section "The metric
catalogue" of docs/metrics.md is generated from it (`python -m measure.catalog`; a test holds the
two equal). A new metric is one `declare` here plus the code that computes it.
Plain Python, no Django.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from measure.words import gettext_noop as _

__all__ = [
    "ACCEPTANCE_BY_POSITION", "ACCEPTANCE_RATE", "ACCEPTANCE_RATE_PER_REQUEST", "CATALOG", "LOG_ACCEPTANCE",
    "PER_REQUEST", "POOLED", "TOKENS_PER_VERIFICATION", "TOKENS_PER_VERIFICATION_PER_REQUEST", "MetricDef",
    "declare", "forget", "get", "markdown_table",
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
class MetricDef:
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

    @property
    def higher_is_better(self) -> bool:
        return self.better == "higher"

    def as_json(self) -> dict[str, Any]:
        """What the browser reads of it (the label still English: the page translates it)."""
        return asdict(self)


CATALOG: dict[str, MetricDef] = {}


def declare(metric: MetricDef) -> MetricDef:
    """Adds `metric` to the catalogue; a key already declared differently is refused."""
    known = CATALOG.get(metric.key)
    if known is not None and known != metric:
        raise ValueError(f"metric {metric.key!r} is already declared, differently")
    CATALOG[metric.key] = metric
    return metric


def forget(key: str) -> None:
    """Takes a metric out of the catalogue (for a test's own declaration)."""
    CATALOG.pop(key, None)


def get(key: str) -> MetricDef:
    """The declaration of `key`; a KeyError names a metric nobody declared."""
    try:
        return CATALOG[key]
    except KeyError:
        raise KeyError(f"metric {key!r} is not declared in measure.catalog") from None


def _declare_all(*metrics: MetricDef) -> None:
    for metric in metrics:
        declare(metric)


_declare_all(
    # Per request, shown as the median over the run's requests with its spread.
    MetricDef(
        "ttft_s",
        _("TTFT"),
        "s",
        "sending the request to its first streamed token, by SparkDash's clock",
        "lower",
        digits=3,
        column=True,
    ),
    MetricDef(
        "ttft_engine_s",
        _("TTFT (engine)"),
        "s",
        "the engine's own prompt-processing time, where it reports one",
        "lower",
        digits=3,
    ),
    MetricDef(
        "decode_tps_client",
        _("decode (client)"),
        "tok/s",
        "output tokens after the first / the time from the first to the last token, by SparkDash's clock",
        column=True,
    ),
    MetricDef(
        "decode_tps_engine",
        _("decode (engine)"),
        "tok/s",
        "the engine's own generation speed, where it reports one",
    ),
    MetricDef(
        "prefill_tps",
        _("prefill"),
        "tok/s",
        "prompt tokens / the engine's prompt-processing time",
        digits=0,
        column=True,
    ),
    MetricDef("e2e_s", _("E2E"), "s", "sending the request to its last token", "lower", digits=2),
    # Read from other tools' result files (runs.core.imports): figures SparkDash itself reads as
    # decode (client), declared so an imported run shows them under one definition.
    MetricDef(
        "tpot_s",
        _("TPOT"),
        "ms",
        "time per output token after the first: (E2E - TTFT) / (output tokens - 1), per request",
        "lower",
        scale=1000,
        digits=1,
    ),
    MetricDef(
        "itl_s",
        _("ITL"),
        "ms",
        "inter-token latency: the gaps between streamed chunks, over every request's gaps",
        "lower",
        scale=1000,
        digits=1,
    ),
    MetricDef(
        "ttfr_s",
        _("TTFR (first reasoning token)"),
        "s",
        "sending the request to its first reasoning token",
        "lower",
        digits=3,
    ),
    MetricDef(
        "ttfo_s",
        _("TTFO (first answer token)"),
        "s",
        "sending the request to its first answer token, after any reasoning",
        "lower",
        digits=3,
    ),
    MetricDef(
        "reasoning_tokens",
        _("reasoning tokens"),
        "tokens",
        "tokens of reasoning before the answer",
        "",
        digits=0,
    ),
    MetricDef(
        "answer_tokens",
        _("answer tokens"),
        "tokens",
        "tokens of the answer, after any reasoning",
        "",
        digits=0,
    ),
    MetricDef(
        "decode_tps_answer",
        _("decode (answer tokens)"),
        "tok/s",
        "answer tokens / the time from the first to the last answer token",
    ),
    # Acceptance: pooled over the run is the headline; the requests' own ratios are secondary.
    MetricDef(
        ACCEPTANCE_RATE,
        _("acceptance rate"),
        "%",
        "pooled over the run: accepted draft tokens / drafted tokens, by the engine's counters where it "
        "has them",
        scale=100,
        over_requests="pooled",
        column=True,
    ),
    MetricDef(
        TOKENS_PER_VERIFICATION,
        _("tokens per verification"),
        "tokens",
        "pooled over the run: (accepted draft tokens + verifications) / verifications",
        digits=2,
        over_requests="pooled",
        column=True,
    ),
    MetricDef(
        ACCEPTANCE_RATE_PER_REQUEST,
        _("acceptance rate, spread over requests"),
        "%",
        "each request's own accepted / drafted tokens; secondary, never the headline",
        scale=100,
    ),
    MetricDef(
        TOKENS_PER_VERIFICATION_PER_REQUEST,
        _("tokens per verification, spread over requests"),
        "tokens",
        "each request's own tokens per verification; secondary, never the headline",
        digits=2,
    ),
    MetricDef(
        LOG_ACCEPTANCE,
        _("acceptance (engine log)"),
        "%",
        "accepted / drafted tokens summed over the engine log's draft lines, warm-up included; shown "
        "among a run's counters, and an Ollama run's pooled acceptance (source log)",
        scale=100,
        over_requests="pooled",
    ),
    # Load, energy and the machine.
    MetricDef(
        "total_tps",
        _("total tok/s of the box"),
        "tok/s",
        "output tokens of every answer at one load "
        "level / the time from the first request sent to the last token",
        column=True,
    ),
    MetricDef(
        "finish_s",
        _("time to finish per answer"),
        "s",
        "one answer's time from sent to last token at one load level",
        "lower",
        digits=2,
    ),
    MetricDef(
        "top_total_tps",
        _("total at the highest level"),
        "tok/s",
        "a concurrency sweep's total tok/s at its highest load level",
        over_requests="value",
    ),
    MetricDef(
        "best_decode_tps",
        _("decode at the best length"),
        "tok/s",
        "a lookahead sweep's decode (client) at its fastest lookahead",
        over_requests="value",
    ),
    MetricDef(
        "j_per_token",
        _("energy per output token"),
        "J",
        "the machine's energy over the run / its output tokens, where power was read",
        "lower",
        digits=3,
        over_requests="value",
        column=True,
    ),
    MetricDef(
        "bandwidth_gbps",
        _("measured memory bandwidth"),
        "GB/s",
        "bytes copied / copy time, the median over passes",
        over_requests="value",
    ),
    MetricDef(
        "wall_s",
        _("wall time per pass"),
        "s",
        "one replay pass of the recorded session, start to last answer",
        "lower",
    ),
    MetricDef(
        "ttft_ratio",
        _("continuation TTFT ratio"),
        "x",
        "TTFT of a prompt continuing a cached prefix / TTFT of the same prompt cold",
        "lower",
        digits=2,
        over_requests="value",
    ),
    # Quality: one score per run, out of its questions, tasks or needles.
    MetricDef(
        "accuracy",
        _("accuracy"),
        "%",
        "MMLU-Pro questions answered correctly / questions asked",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "pass_at_1_plus",
        _("pass@1 (plus tests)"),
        "%",
        "EvalPlus tasks whose one answer passes the base and the extended tests / tasks",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "pass_at_1_base",
        _("pass@1 (base tests)"),
        "%",
        "EvalPlus tasks whose one answer passes the base tests / tasks",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "found",
        _("needles found"),
        "%",
        "needles the answer names / needles hidden, over every depth and length",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "identical_share",
        _("identical answers"),
        "%",
        "answers identical with and without drafting / answers",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "all_identical",
        _("every answer identical"),
        "",
        "a lossless check whose every answer was identical",
        over_requests="value",
        over_runs="count",
    ),
    MetricDef(
        "f1",
        _("table F1"),
        "%",
        "the agent table's correct rows weighed against every row it answered and every row of the truth",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "score",
        _("table score (correct rows)"),
        "rows",
        "the agent table's rows that match the truth",
        digits=0,
        over_requests="value",
    ),
    MetricDef(
        "precision",
        _("precision (correct of rows answered)"),
        "%",
        "the agent table's correct rows / rows it answered",
        scale=100,
        over_requests="value",
    ),
    MetricDef(
        "exact",
        _("exact (the truth table, nothing else)"),
        "runs",
        "an agent run whose table is the truth, row for row",
        over_requests="value",
        over_runs="count",
    ),
    MetricDef(
        "task_s",
        _("task time (completed runs)"),
        "s",
        "an agent run's time from its first step to its answer, completed runs only",
        "lower",
        over_requests="value",
    ),
    MetricDef(
        "completed",
        _("completed"),
        "runs",
        "an agent run that answered within its steps",
        over_requests="value",
        over_runs="count",
    ),
    MetricDef(
        "rescued",
        _("rescued (answered after the watchdog)"),
        "runs",
        "an agent run that answered only after the read-loop watchdog stepped in",
        "lower",
        over_requests="value",
        over_runs="count",
    ),
    MetricDef(
        "loop",
        _("loop"),
        "runs",
        "an agent run stopped in a read loop",
        "lower",
        over_requests="value",
        over_runs="count",
    ),
    MetricDef(
        "error",
        _("error"),
        "runs",
        "an agent run that ended on an error",
        "lower",
        over_requests="value",
        over_runs="count",
    ),
)


def markdown_table() -> str:
    """The catalogue as docs/metrics.md's generated section shows it, one row per metric."""
    lines = [
        "| key | label | unit | better | over requests | over runs | definition |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in CATALOG.values():
        better = m.better or "neither"
        lines.append(
            f"| `{m.key}` | {m.label} | {m.unit or '-'} | {better} | {m.over_requests} | "
            f"{m.over_runs} | {m.definition} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
