"""Quality per second and quality per joule, the scorecard's efficiency rows, without Django.

For the benchmarks that score one answer per request (MMLU-Pro, HumanEval+, MBPP+), per run
(docs/metrics.md, Quality per second and per joule):

- correct answers per minute = score x questions answered / the run's wall minutes (started to
  finished);
- correct answers per kJ = score x (answered / asked) x 1000 / J per request
  (summary.telemetry.energy): each request asks one question, so that is correct answers per
  joule; a budget hit before answering (not in the score) still took its energy.

The agent table is left out: one table takes many requests, so its score per request means nothing.
A run without energy (no power reading) gives no per-kJ value; a row no run measured is not shown.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from measure.stats import summarize
from runs.core.hardware import energy_of
from runs.core.readings import Summary
from runs.core.registry import BENCHMARKS, JOB_OF_BENCHMARK
from runs.core.scoring.figures import ScoreRow, spread_text

__all__ = ["SCORES", "TimedRun", "efficiency_rows"]

# The summary key of each benchmark's 0..1 score, over summary["answered"] of summary["total"] questions.
SCORES = {"MMLU-Pro": "accuracy", "HumanEval+": "pass_at_1_plus", "MBPP+": "pass_at_1_plus"}


class TimedRun(NamedTuple):
    """A run with its wall time: id, job, summary, seconds from started to finished (None if unknown)."""

    id: int
    job: str
    summary: Summary
    wall_s: float | None


def _answered(summary: Summary) -> tuple[float, float]:
    """(questions the score is over, questions asked): a budget hit before answering is asked, not scored."""
    total = float(summary.get("total") or 0)
    return float(summary.get("answered", total) or 0), total


def _per_minute(summary: Summary, key: str, wall_s: float | None) -> float | None:
    score, (answered, total) = summary.get(key), _answered(summary)
    if score is None or not total or not wall_s:
        return None
    return float(score) * answered / (wall_s / 60.0)


def _per_kj(summary: Summary, key: str) -> float | None:
    energy, score = energy_of(summary), summary.get(key)
    j_per_request = energy.get("j_per_request") if energy else None
    answered, total = _answered(summary)
    if score is None or not j_per_request or not total:
        return None
    # Every question asked took energy, budget hits too: correct answers over all requests' joules.
    return float(score) * (answered / total) * 1000.0 / float(j_per_request)


def _row(benchmark: str, key: str, unit: str, values: Sequence[tuple[int, float | None]]) -> ScoreRow:
    measured = [(run_id, v) for run_id, v in values if v is not None]
    spread = summarize(v for _, v in measured)
    return {
        "benchmark": benchmark, "job": JOB_OF_BENCHMARK[benchmark], "key": key,
        "label": f"correct answers {unit}", "unit": unit, "higher_is_better": True, "count": False,
        "spread": spread, "tally": None, "runs": len(measured), "run_ids": [run_id for run_id, _ in measured],
        "out_of": "", "text": spread_text(spread, unit, 2),
    }


def efficiency_rows(benchmark: str, runs: Sequence[TimedRun]) -> list[ScoreRow]:
    """The benchmark's quality-per-second and quality-per-joule rows (those any run measured)."""
    key = SCORES.get(benchmark)
    spec = next((b for b in BENCHMARKS if b.name == benchmark), None)
    if key is None or spec is None:
        return []
    held = [r for r in runs if spec.holds(r.job, r.summary)]
    rows = [
        _row(benchmark, "correct_per_minute", "per minute",
             [(r.id, _per_minute(r.summary, key, r.wall_s)) for r in held]),
        _row(benchmark, "correct_per_kj", "per kJ", [(r.id, _per_kj(r.summary, key)) for r in held]),
    ]
    return [row for row in rows if row["spread"]]
