"""Scorecards and comparisons of runs, without Django: one value per run, a spread over runs.

A scorecard row is one metric of one benchmark (speed, agent table, needle, MMLU-Pro,
HumanEval+, MBPP+): each run gives one value, read from its summary, and the row holds the
Spread of those values over the runs (docs/metrics.md: a median, shown with min, max and n).

Comparing two rows gives the difference of the medians and a verdict:

- "n/a": a side has no figure;
- "no spread": a side has fewer than 2 values, so noise can't be judged (the delta is shown);
- "noise": the two medians' 95 % confidence intervals overlap, touching included, even when the
  medians differ (docs/metrics.md, How figures are reported); a spread without an interval
  (stored before intervals were, or a count) takes its [min, max] range instead;
- "better" / "worse": the intervals are apart, judged by the metric's direction.

Count rows (how many runs ended as "completed", "loop", ...) compare the share of runs with the
same rule applied to each run's 0/1 outcome: only a unanimous difference is not noise.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NotRequired, TypedDict

from measure.stats import Spread, interval, summarize
from measure.text import EN_DASH, interval_text, number_text, pooled_text, spread_text
from runs.core.readings import ScoredMetric, Summary
from runs.core.registry import BENCHMARKS, JOB_OF_BENCHMARK, METRICS

__all__ = [
    "CompareRow",
    "Comparison",
    "ScoreRow",
    "Tally",
    "benchmark_of",
    "compare",
    "compare_counts",
    "compare_rows",
    "delta_text",
    "figure_text",
    "interval_text",
    "pooled_text",
    "score_rows",
    "spread_text",
    "value_text",
]

Verdict = Literal["better", "worse", "noise", "no spread", "n/a"]


class Comparison(TypedDict):
    delta: float | None
    delta_pct: float | None
    verdict: Verdict


class Tally(TypedDict):
    count: int
    n: int


def compare(base: Spread | None, other: Spread | None, higher_is_better: bool) -> Comparison:
    """Compare `other` with `base`: delta of the medians, delta in % of the base, verdict.

    :param base: the reference figure (config A), or None when it has none
    :param other: the figure compared with it (config B)
    :param higher_is_better: the metric's direction (tok/s: True, seconds: False)
    """
    if base is None or other is None:
        return {"delta": None, "delta_pct": None, "verdict": "n/a"}
    delta = other["median"] - base["median"]
    verdict = _verdict(base, other, delta, higher_is_better)
    return {"delta": delta, "delta_pct": _pct(delta, base["median"]), "verdict": verdict}


def compare_counts(base: Tally | None, other: Tally | None, higher_is_better: bool) -> Comparison:
    """Compare the share of runs counted (e.g. completed): delta as a 0..1 share, verdict as compare()."""
    if not base or not other or not base["n"] or not other["n"]:
        return {"delta": None, "delta_pct": None, "verdict": "n/a"}
    base_share, other_share = base["count"] / base["n"], other["count"] / other["n"]
    delta = other_share - base_share
    verdict = _verdict(_outcome_range(base), _outcome_range(other), delta, higher_is_better)
    return {"delta": delta, "delta_pct": _pct(delta, base_share), "verdict": verdict}


def _outcome_range(tally: Tally) -> Spread:
    # Each run counts 1 or 0: the range is [1, 1] or [0, 0] only when the runs agree.
    low = 1.0 if tally["count"] == tally["n"] else 0.0
    high = 1.0 if tally["count"] else 0.0
    return {"median": tally["count"] / tally["n"], "min": low, "max": high, "n": tally["n"]}


def _verdict(base: Spread, other: Spread, delta: float, higher_is_better: bool) -> Verdict:
    if base["n"] < 2 or other["n"] < 2:
        return "no spread"
    (base_low, base_high), (other_low, other_high) = interval(base), interval(other)
    if other_low <= base_high and base_low <= other_high:
        return "noise"
    return "better" if (delta > 0) == higher_is_better else "worse"


def _pct(delta: float, base: float) -> float | None:
    # A change from zero has no relative size.
    return delta / abs(base) * 100 if base else None


# --- What each benchmark reads from a run's summary -------------------------------------------


def benchmark_of(job: str, summary: Summary) -> str | None:
    """The benchmark a run belongs to, or None for jobs the scorecard doesn't score."""
    return next((b.name for b in BENCHMARKS if b.holds(job, summary)), None)


# --- Rows -------------------------------------------------------------------------------------


class ScoreRow(TypedDict):
    benchmark: str
    job: str
    key: str
    label: str
    unit: str
    higher_is_better: bool
    count: bool
    spread: Spread | None
    tally: Tally | None
    runs: int
    run_ids: list[int]
    out_of: str
    text: str
    note: NotRequired[str]  # why there is no figure, where a row can say (energy rows)
    interval: NotRequired[str]  # interval_text() of the spread over runs, "" where there is none


class CompareRow(TypedDict):
    benchmark: str
    key: str
    label: str
    higher_is_better: bool
    a: ScoreRow
    b: ScoreRow
    out_of: str
    delta: float | None
    delta_pct: float | None
    verdict: Verdict
    delta_text: str
    delta_pct_text: str


def score_rows(runs: Iterable[tuple[int, str, Summary]]) -> list[ScoreRow]:
    """One row per metric of every benchmark (runs=0 where none ran), from (run id, job, summary).

    Every run given counts: the caller picks which (e.g. the latest succeeded ones).
    """
    by_benchmark: dict[str, list[tuple[int, Summary]]] = {}
    for run_id, job, summary in runs:
        name = benchmark_of(job, summary)
        if name:
            by_benchmark.setdefault(name, []).append((run_id, summary))
    return [_score_row(m, by_benchmark.get(m.benchmark, [])) for m in METRICS]


def _score_row(metric: ScoredMetric, runs: list[tuple[int, Summary]]) -> ScoreRow:
    values = [metric.value(summary) for _, summary in runs]
    spread: Spread | None = None
    tally: Tally | None = None
    if metric.count:
        counted = [v for v in values if v is not None]
        tally = {"count": sum(bool(v) for v in counted), "n": len(counted)} if counted else None
    else:
        spread = summarize(values)
    return {
        "benchmark": metric.benchmark, "job": JOB_OF_BENCHMARK[metric.benchmark], "key": metric.key,
        "label": metric.label, "unit": metric.unit, "higher_is_better": metric.higher_is_better,
        "count": metric.count,
        "spread": spread, "tally": tally, "runs": len(runs), "run_ids": [run_id for run_id, _ in runs],
        "out_of": _out_of(metric, [summary for _, summary in runs]),
        "text": figure_text(metric, spread, tally),
        "interval": interval_text(spread, metric.unit, metric.digits, metric.scale, counted="runs"),
    }


def compare_rows(base: list[ScoreRow], other: list[ScoreRow]) -> list[CompareRow]:
    """Pair the rows of two score_rows() results; keep benchmarks that either side ran."""
    metrics = {(m.benchmark, m.key): m for m in METRICS}
    return [
        _compare_row(metrics[(a["benchmark"], a["key"])], a, b)
        for a, b in zip(base, other, strict=True)
        if a["runs"] or b["runs"]
    ]


def _compare_row(metric: ScoredMetric, a: ScoreRow, b: ScoreRow) -> CompareRow:
    if metric.count:
        result = compare_counts(a["tally"], b["tally"], metric.higher_is_better)
    else:
        result = compare(a["spread"], b["spread"], metric.higher_is_better)
    return {
        "benchmark": metric.benchmark, "key": metric.key, "label": metric.label,
        "higher_is_better": metric.higher_is_better, "a": a, "b": b,
        "out_of": _pair_out_of(a["out_of"], b["out_of"]), **result,
        "delta_text": delta_text(metric, result["delta"]),
        "delta_pct_text": "—" if result["delta_pct"] is None else f"{result['delta_pct']:+.1f} %",
    }


# --- Text, the one way figures are shown ------------------------------------------------------


def figure_text(metric: ScoredMetric, spread: Spread | None, tally: Tally | None = None) -> str:
    """median [min-max] unit (n=N); a count as "k of n runs"; an em dash when there is no figure."""
    if tally:
        return f"{tally['count']} of {tally['n']} runs"
    return spread_text(spread, metric.unit, metric.digits, metric.scale)


def value_text(metric: ScoredMetric, value: float) -> str:
    """One value of the metric (not a spread), in its unit: "161.6 tok/s"."""
    return f"{number_text(value, metric.scale, metric.digits)} {metric.unit}".rstrip()


def delta_text(metric: ScoredMetric, delta: float | None) -> str:
    """The difference of two medians in the metric's unit (shares in percentage points)."""
    if delta is None:
        return "—"
    if metric.count or metric.unit == "%":
        # A difference of two shares is in percentage points, not percent.
        return f"{delta * 100:+.1f} pp"
    return f"{number_text(delta, metric.scale, metric.digits, '+')} {metric.unit}"


def _pair_out_of(a: str, b: str) -> str:
    # Scores out of different totals (e.g. a question subset) are not like for like: say so.
    if a == b or not b:
        return a
    return f"{a} vs {b}" if a else b


def _out_of(metric: ScoredMetric, summaries: list[Summary]) -> str:
    if metric.out_of is None:
        return ""
    totals = sorted({t for s in summaries if (t := metric.out_of(s)) is not None})
    if not totals:
        return ""
    span = f"{totals[0]:g}" if len(totals) == 1 else f"{totals[0]:g}{EN_DASH}{totals[-1]:g}"
    return f"{span} {metric.out_of_unit}"
