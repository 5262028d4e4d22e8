import pytest

from runs.core.scoring.efficiency import TimedRun, efficiency_rows
from tests.factories import telemetry

pytestmark = pytest.mark.backend_free


def rows(summary, wall_s=120.0):
    return {row["key"]: row["spread"]["median"] for row in efficiency_rows("MMLU-Pro", [
        TimedRun(1, "mmlu-pro", summary, wall_s)])}


def test_it_counts_correct_answers_over_the_questions_answered():
    # 3 correct of 4 answered (2 budget hits of 6 asked) in 2 minutes; 20 J per request asked.
    summary = {"accuracy": 0.75, "total": 6, "answered": 4, "budget_hit": 2,
               "telemetry": telemetry(0.5, 20.0)}
    figures = rows(summary)
    assert figures["correct_per_minute"] == pytest.approx(3 / 2)
    assert figures["correct_per_kj"] == pytest.approx(3 / (6 * 20.0) * 1000)


def test_it_reads_a_run_from_before_budget_hits_as_all_answered():
    figures = rows({"accuracy": 0.5, "total": 120, "telemetry": telemetry(0.5, 20.0)})
    assert figures["correct_per_minute"] == pytest.approx(30.0)
    assert figures["correct_per_kj"] == pytest.approx(25.0)
