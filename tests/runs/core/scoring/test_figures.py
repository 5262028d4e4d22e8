import pytest

from measure.stats import summarize
from runs.core.registry import JOBS
from runs.core.scoring.figures import compare, compare_counts, compare_rows, interval_text, score_rows

pytestmark = pytest.mark.backend_free


def spread(*values):
    return summarize(values)


def test_it_calls_a_clear_gain_better():
    result = compare(spread(40, 41, 42), spread(60, 61, 62), higher_is_better=True)
    assert result["verdict"] == "better"
    assert result["delta"] == 20.0
    assert round(result["delta_pct"], 2) == 48.78


def test_it_calls_a_clear_loss_worse():
    assert compare(spread(60, 61, 62), spread(40, 41, 42), higher_is_better=True)["verdict"] == "worse"


def test_it_labels_overlapping_intervals_as_noise():
    # Of three values the median's interval is their range (docs/metrics.md).
    result = compare(spread(40, 41, 42), spread(41, 42, 43), higher_is_better=True)
    assert result["verdict"] == "noise"
    assert result["delta"] == 1.0


def test_it_counts_touching_intervals_as_noise():
    assert compare(spread(40, 41, 42), spread(42, 43, 44), higher_is_better=True)["verdict"] == "noise"


def test_it_judges_lower_is_better_metrics_by_their_direction():
    slower_ttft, faster_ttft = spread(0.30, 0.31, 0.32), spread(0.20, 0.21, 0.22)
    assert compare(slower_ttft, faster_ttft, higher_is_better=False)["verdict"] == "better"
    assert compare(faster_ttft, slower_ttft, higher_is_better=False)["verdict"] == "worse"


def _steady(median, outlier):
    # 20 requests close to the median, one of them far off: a wide range, a narrow interval.
    return summarize([median + (i - 9.5) * 0.1 for i in range(19)] + [outlier])


def test_it_follows_the_intervals_not_the_ranges():
    base, other = _steady(40.0, 30.0), _steady(42.0, 35.0)
    assert other["min"] <= base["max"]  # the ranges overlap: the range rule would say noise
    assert other["median_ci"][0] > base["median_ci"][1]
    assert compare(base, other, higher_is_better=True)["verdict"] == "better"


def test_it_calls_overlapping_intervals_noise_though_the_medians_differ():
    base, other = _steady(40.0, 30.0), _steady(40.3, 30.0)
    assert other["median"] > base["median"]
    assert other["median_ci"][0] <= base["median_ci"][1]
    assert compare(base, other, higher_is_better=True)["verdict"] == "noise"


def test_it_compares_stored_spreads_without_intervals_by_their_ranges():
    old_base = {"median": 40.0, "min": 30.0, "max": 41.0, "n": 20}
    old_other = {"median": 42.0, "min": 35.0, "max": 43.0, "n": 20}
    assert compare(old_base, old_other, True)["verdict"] == "noise"
    apart = {"median": 45.0, "min": 44.0, "max": 46.0, "n": 20}
    assert compare(old_base, apart, True)["verdict"] == "better"


def test_it_says_no_spread_but_keeps_the_delta_when_a_side_has_one_run():
    result = compare(spread(40), spread(60, 61, 62), higher_is_better=True)
    assert result == {"delta": 21.0, "delta_pct": 52.5, "verdict": "no spread"}


def test_it_says_n_a_when_a_side_is_missing():
    assert compare(None, spread(1, 2), True) == {"delta": None, "delta_pct": None, "verdict": "n/a"}
    assert compare(spread(1, 2), None, True)["verdict"] == "n/a"


def test_it_has_no_relative_delta_from_a_zero_base():
    result = compare(spread(0, 0), spread(0.5, 0.6), higher_is_better=True)
    assert result["delta_pct"] is None
    assert result["verdict"] == "better"


def test_it_compares_counts_of_runs_by_their_share():
    all_completed, mixed, none = {"count": 5, "n": 5}, {"count": 3, "n": 5}, {"count": 0, "n": 4}
    assert compare_counts(mixed, all_completed, True)["verdict"] == "noise"
    assert compare_counts(none, all_completed, True) == {"delta": 1.0, "delta_pct": None, "verdict": "better"}
    assert compare_counts(none, all_completed, False)["verdict"] == "worse"
    assert compare_counts({"count": 1, "n": 1}, mixed, True)["verdict"] == "no spread"
    assert compare_counts(None, mixed, True)["verdict"] == "n/a"


def agent_run(run_id, score, outcome, task_s, answered=None):
    answered = score if answered is None else answered
    summary = {"score": score, "rows": 47, "answer_rows": answered, "outcome": outcome, "task_s": task_s}
    return run_id, "agent-table", summary


def rows_by_key(rows, benchmark):
    return {row["key"]: row for row in rows if row["benchmark"] == benchmark}


def test_it_times_agent_tasks_over_completed_runs_only():
    runs = [agent_run(1, 47, "completed", 60.0), agent_run(2, 47, "completed", 62.0),
            agent_run(3, 30, "loop", 200.0)]
    rows = rows_by_key(score_rows(runs), "Agent table")
    task = rows["task_s"]["spread"]
    expected = {"median": 61.0, "min": 60.0, "max": 62.0, "n": 2}
    assert {k: task[k] for k in expected} == expected
    assert rows["task_s"]["runs"] == 3
    assert rows["score"]["text"] == "47 [30\u201347] rows (n=3)"
    assert rows["score"]["out_of"] == "47 rows"
    assert rows["exact"]["tally"] == {"count": 2, "n": 3}
    assert rows["loop"]["text"] == "1 of 3 runs"
    assert rows["error"]["tally"] == {"count": 0, "n": 3}


def test_it_heads_the_agent_table_with_f1_so_extra_rows_cost():
    runs = [agent_run(1, 47, "completed", 60.0), agent_run(2, 47, "rescued", 90.0, answered=560),
            agent_run(3, 47, "completed", 61.0, answered=49)]
    rows = score_rows(runs)
    agent = [row for row in rows if row["benchmark"] == "Agent table"]
    assert agent[0]["key"] == "f1" and JOBS["agent-table"].headline.key == "f1"
    by_key = rows_by_key(rows, "Agent table")
    assert by_key["score"]["spread"]["min"] == 47.0
    f1 = by_key["f1"]["spread"]
    assert f1["max"] == 1.0 and f1["min"] == pytest.approx(2 * 47 / (47 + 560))
    assert by_key["f1"]["text"] == f"{100 * 2 * 47 / 96:.1f} [15.5\u2013100.0] % (n=3)"
    assert by_key["precision"]["spread"]["min"] == pytest.approx(47 / 560)
    assert by_key["exact"]["tally"] == {"count": 1, "n": 3}
    assert by_key["rescued"]["tally"] == {"count": 1, "n": 3}
    assert by_key["task_s"]["spread"]["n"] == 2  # the rescued run's time is not a task time


def test_it_reads_stored_agent_summaries_that_predate_f1():
    new = dict(agent_run(1, 40, "completed", 60.0, answered=50)[2], f1=0.2, precision=0.3, exact=False)
    older = agent_run(2, 47, "completed", 60.0)[2]
    oldest = {"score": 47, "rows": 47, "correct": True, "outcome": "completed", "task_s": 60.0}
    rows = rows_by_key(score_rows([(1, "agent-table", new)]), "Agent table")
    assert (rows["f1"]["spread"]["median"], rows["precision"]["spread"]["median"]) == (0.2, 0.3)
    rows = rows_by_key(score_rows([(2, "agent-table", older)]), "Agent table")
    assert (rows["f1"]["spread"]["median"], rows["exact"]["tally"]) == (1.0, {"count": 1, "n": 1})
    rows = rows_by_key(score_rows([(3, "agent-table", oldest)]), "Agent table")
    assert (rows["f1"]["text"], rows["exact"]["tally"], rows["score"]["spread"]["median"]) == (
        "\u2014", None, 47.0)


def test_it_splits_evalplus_runs_by_dataset():
    runs = [
        (1, "evalplus", {"dataset": "humaneval", "pass_at_1_plus": 0.8, "pass_at_1_base": 0.9, "total": 164}),
        (2, "evalplus", {"dataset": "mbpp", "pass_at_1_plus": 0.6, "pass_at_1_base": 0.7, "total": 378}),
        (3, "replay", {"decode_tps_client": {"median": 9.0}}),
    ]
    rows = score_rows(runs)
    assert rows_by_key(rows, "HumanEval+")["pass_at_1_plus"]["run_ids"] == [1]
    assert rows_by_key(rows, "MBPP+")["pass_at_1_base"]["text"] == "70.0 [70.0\u201370.0] % (n=1)"
    assert rows_by_key(rows, "Speed")["decode_tps_client"]["runs"] == 0


def test_it_skips_runs_without_a_figure():
    runs = [(1, "speed", {"decode_tps_client": {"median": 40.0}, "acceptance_rate": None}),
            (2, "speed", {"decode_tps_client": {"median": 42.0}})]
    rows = rows_by_key(score_rows(runs), "Speed")
    assert rows["acceptance_rate"]["spread"] is None
    assert rows["acceptance_rate"]["text"] == "\u2014"
    assert rows["decode_tps_client"]["text"] == "41.0 [40.0\u201342.0] tok/s (n=2)"


def test_it_pairs_rows_of_benchmarks_either_side_ran():
    base = score_rows([(1, "mmlu-pro", {"accuracy": 0.40, "total": 100}),
                       (2, "mmlu-pro", {"accuracy": 0.42, "total": 100})])
    other = score_rows([(3, "mmlu-pro", {"accuracy": 0.50, "total": 200}),
                        (4, "mmlu-pro", {"accuracy": 0.52, "total": 200}),
                        (5, "needle", {"score": 7, "total": 8})])
    rows = {(r["benchmark"], r["key"]): r for r in compare_rows(base, other)}
    assert set(rows) == {("MMLU-Pro", "accuracy"), ("Needle", "found")}
    accuracy = rows[("MMLU-Pro", "accuracy")]
    assert accuracy["verdict"] == "better"
    assert accuracy["delta_text"] == "+10.0 pp"
    assert accuracy["delta_pct_text"] == "+24.4 %"
    assert accuracy["out_of"] == "100 questions vs 200 questions"
    assert rows[("Needle", "found")]["verdict"] == "n/a"
    assert rows[("Needle", "found")]["b"]["text"] == "87.5 [87.5\u201387.5] % (n=1)"


def test_it_writes_the_interval_and_says_a_short_p99_is_the_max():
    text = interval_text(summarize(float(v) for v in range(1, 19)), "tok/s")
    assert text.startswith("95 % CI ")
    assert "p90 17.0 [CI " in text
    assert text.endswith("p99 of 18 requests = max 18.0")


def test_it_writes_no_interval_for_one_value_and_none_for_a_stored_spread():
    one = interval_text(summarize([4.0]), "s", counted="runs")
    assert one.startswith("no CI from 1 run; p90 of 1 run = max")
    assert interval_text({"median": 4.0, "min": 3.0, "max": 5.0, "n": 3}, "s") == ""
