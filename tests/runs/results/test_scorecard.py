from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from runs.models import Run
from runs.results.scorecard import compare_configs, scorecard
from tests.factories import EngineConfigFactory, RunFactory, telemetry

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

def _old(figure):
    """The keys every spread has had: median, min, max, n (newer ones add intervals and percentiles)."""
    return {k: figure[k] for k in ("median", "min", "max", "n")}



def spread(median, width, n=9):
    return {"median": median, "min": median - width, "max": median + width, "n": n}


def speed_summary(tps, ttft=0.21):
    return {"decode_tps_client": spread(tps, 2.0), "decode_tps_engine": spread(tps + 1, 2.0),
            "ttft_s": spread(ttft, 0.01), "acceptance_rate": None}


def agent_summary(score, outcome, task_s, answered=None):
    answered = score if answered is None else answered
    return {"score": score, "rows": 47, "answer_rows": answered,
            "precision": score / answered if answered else None, "f1": 2 * score / (47 + answered),
            "exact": score == answered == 47, "outcome": outcome, "task_s": task_s,
            "steps": 12 if outcome == "completed" else 26, "answer": "GET,/users,12\n" * score}


# An agent-table summary as stored before precision, F1, exact and answer_rows existed.
OLD_AGENT_SUMMARY = {"score": 47, "rows": 47, "correct": True, "outcome": "completed", "task_s": 61.0,
                     "steps": 9, "answer": "GET,/users,12"}


def evalplus_summary(dataset, plus, base, total):
    return {"dataset": dataset, "pass_at_1_plus": plus, "pass_at_1_base": base, "total": total}


def succeeded(config, job, summary, minute=0, status=Run.Status.SUCCEEDED):
    created = T0 + timedelta(minutes=minute)
    return RunFactory(config=config, job=job, status=status, summary=summary, created=created)


def speed_runs(config, *tps):
    return [succeeded(config, "speed", speed_summary(v), minute=i) for i, v in enumerate(tps)]


def by_key(rows, benchmark):
    return {row["key"]: row for row in rows if row["benchmark"] == benchmark}


@pytest.fixture
def config():
    config = EngineConfigFactory(name="qwen3-mtp")
    for minute, (tps, ttft) in enumerate([(40.0, 0.20), (41.0, 0.25), (42.0, 0.22)]):
        succeeded(config, "speed", speed_summary(tps, ttft), minute=minute)
    succeeded(config, "speed", speed_summary(99.0), minute=10, status=Run.Status.FAILED)
    succeeded(config, "speed", {}, minute=11, status=Run.Status.RUNNING)
    return config


def test_it_takes_the_median_over_runs_of_their_speed_medians(config):
    rows = by_key(scorecard(config), "Speed")
    assert _old(rows["decode_tps_client"]["spread"]) == {"median": 41.0, "min": 40.0, "max": 42.0, "n": 3}
    assert _old(rows["decode_tps_engine"]["spread"]) == {"median": 42.0, "min": 41.0, "max": 43.0, "n": 3}
    assert _old(rows["ttft_s"]["spread"]) == {"median": 0.22, "min": 0.20, "max": 0.25, "n": 3}
    assert rows["ttft_s"]["higher_is_better"] is False
    assert rows["acceptance_rate"]["spread"] is None


def test_it_ignores_runs_that_did_not_succeed(config):
    rows = by_key(scorecard(config), "Speed")
    succeeded_ids = set(config.runs.filter(status=Run.Status.SUCCEEDED).values_list("pk", flat=True))
    assert rows["decode_tps_client"]["runs"] == 3
    assert set(rows["decode_tps_client"]["run_ids"]) == succeeded_ids


def test_it_scores_agent_table_runs():
    config = EngineConfigFactory()
    succeeded(config, "agent-table", agent_summary(47, "completed", 60.2), minute=0)
    succeeded(config, "agent-table", agent_summary(47, "completed", 62.5), minute=1)
    succeeded(config, "agent-table", agent_summary(30, "loop", 109.6), minute=2)
    rows = by_key(scorecard(config), "Agent table")
    assert _old(rows["score"]["spread"]) == {"median": 47.0, "min": 30.0, "max": 47.0, "n": 3}
    assert rows["score"]["out_of"] == "47 rows"
    assert _old(rows["task_s"]["spread"]) == {"median": 61.35, "min": 60.2, "max": 62.5, "n": 2}
    assert rows["exact"]["tally"] == {"count": 2, "n": 3}
    assert rows["f1"]["spread"]["median"] == 1.0 and rows["f1"]["spread"]["min"] == pytest.approx(60 / 77)
    assert rows["completed"]["tally"] == {"count": 2, "n": 3}
    assert rows["loop"]["tally"] == {"count": 1, "n": 3}
    assert rows["error"]["tally"] == {"count": 0, "n": 3}


def test_it_scores_quality_benchmarks_side_by_side_with_speed(config):
    succeeded(config, "mmlu-pro", {"accuracy": 0.40, "correct": 40, "total": 100})
    succeeded(config, "mmlu-pro", {"accuracy": 0.42, "correct": 42, "total": 100}, minute=1)
    succeeded(config, "evalplus", evalplus_summary("humaneval", 0.80, 0.85, 164))
    succeeded(config, "evalplus", evalplus_summary("mbpp", 0.60, 0.70, 378))
    succeeded(config, "needle", {"score": 7, "total": 8})
    rows = scorecard(config)
    assert list(dict.fromkeys(r["benchmark"] for r in rows)) == [
        "Speed", "Needle", "MMLU-Pro", "HumanEval+", "MBPP+"]
    accuracy = by_key(rows, "MMLU-Pro")["accuracy"]["spread"]
    assert _old(accuracy) == {"median": pytest.approx(0.41), "min": 0.40, "max": 0.42, "n": 2}
    assert by_key(rows, "HumanEval+")["pass_at_1_plus"]["spread"]["median"] == 0.80
    assert by_key(rows, "MBPP+")["pass_at_1_base"]["spread"]["median"] == 0.70
    assert by_key(rows, "MBPP+")["pass_at_1_base"]["out_of"] == "378 tasks"
    assert by_key(rows, "Needle")["found"]["spread"]["median"] == 0.875


def test_it_uses_the_latest_20_runs_per_benchmark():
    config = EngineConfigFactory()
    speed_runs(config, *[float(tps) for tps in range(1, 26)])
    succeeded(config, "evalplus", evalplus_summary("mbpp", 0.6, 0.7, 378), minute=-1)
    for minute in range(25):
        succeeded(config, "evalplus", evalplus_summary("humaneval", 0.8, 0.85, 164), minute=minute)
    rows = scorecard(config)
    assert _old(by_key(rows, "Speed")["decode_tps_client"]["spread"]) == {
        "median": 15.5, "min": 6.0, "max": 25.0, "n": 20}
    assert by_key(rows, "HumanEval+")["pass_at_1_plus"]["runs"] == 20
    # An older MBPP+ run is not pushed out by HumanEval+ runs of the same job.
    assert by_key(rows, "MBPP+")["pass_at_1_plus"]["runs"] == 1


def test_it_reads_a_scorecard_and_a_comparison_in_one_query(django_assert_num_queries):
    a, b = EngineConfigFactory(), EngineConfigFactory()
    for config in (a, b):
        speed_runs(config, *[40.0 + i for i in range(25)])
        for minute in range(10):
            succeeded(config, "agent-table", agent_summary(47, "completed", 60.0), minute=minute)
    with django_assert_num_queries(1):
        scorecard(a)
    with django_assert_num_queries(1):
        compare_configs(a, b)


def compare_page(client, a, b):
    return client.get(reverse("runs:compare-configs"), {"a": a.pk, "b": b.pk})


def test_it_labels_a_difference_within_the_spread_as_noise(alice_client):
    a, b = EngineConfigFactory(name="base"), EngineConfigFactory(name="draft")
    speed_runs(a, 40.0, 41.0, 42.0)
    speed_runs(b, 41.0, 42.0, 43.0)
    response = compare_page(alice_client, a, b)
    row = by_key(response.context["rows"], "Speed")["decode_tps_client"]
    assert (row["delta"], row["verdict"]) == (1.0, "noise")
    html = response.content.decode()
    assert "41.0 [40.0\u201342.0] tok/s (n=3)" in html
    assert "42.0 [41.0\u201343.0] tok/s (n=3)" in html
    assert "+1.0 tok/s" in html and "+2.4 %" in html
    noise = ('class="verdict verdict-noise" title="the medians\' 95 % intervals (or, without them, '
             'the [min\u2013max] ranges) of A and B overlap">noise</span>')
    assert noise in html
    # Over 3 runs the median's interval is their range; the percentiles are the largest run.
    hover = "95 % CI 40.0\u201342.0 tok/s; p90 of 3 runs = max 42.0; p99 of 3 runs = max 42.0"
    assert f'<span title="{hover}">41.0 [40.0\u201342.0] tok/s (n=3)</span>' in html


def test_it_labels_a_clear_gain_better(alice_client):
    a, b = EngineConfigFactory(), EngineConfigFactory()
    speed_runs(a, 40.0, 41.0, 42.0)
    speed_runs(b, 60.0, 61.0, 62.0)
    response = compare_page(alice_client, a, b)
    rows = by_key(response.context["rows"], "Speed")
    assert rows["decode_tps_client"]["verdict"] == "better"
    # Every speed figure of b moved the same way; TTFT didn't move, so it is noise.
    assert rows["ttft_s"]["verdict"] == "noise"
    html = response.content.decode()
    assert "+20.0 tok/s" in html and "+48.8 %" in html
    assert ">better</span>" in html


def test_it_compares_agent_outcomes_and_missing_benchmarks(alice_client):
    a, b = EngineConfigFactory(), EngineConfigFactory()
    for minute in range(3):
        succeeded(a, "agent-table", agent_summary(47, "completed", 60.0 + minute), minute=minute)
        succeeded(b, "agent-table", agent_summary(30, "loop", 120.0), minute=minute)
    succeeded(b, "mmlu-pro", {"accuracy": 0.4, "correct": 40, "total": 100})
    rows = compare_page(alice_client, a, b).context["rows"]
    agent = by_key(rows, "Agent table")
    assert agent["completed"]["verdict"] == "worse"
    assert agent["loop"]["verdict"] == "worse"
    assert agent["task_s"]["verdict"] == "n/a"
    assert by_key(rows, "MMLU-Pro")["accuracy"]["verdict"] == "n/a"


def test_it_puts_the_agent_tables_f1_first_and_counts_rescued_runs(alice_client):
    config = EngineConfigFactory()
    succeeded(config, "agent-table", agent_summary(47, "completed", 60.0), minute=0)
    succeeded(config, "agent-table", agent_summary(47, "rescued", 95.0, answered=560), minute=1)
    rows = [row for row in scorecard(config) if row["benchmark"] == "Agent table"]
    assert [row["key"] for row in rows][:4] == ["f1", "score", "precision", "exact"]
    assert {row["key"]: row["text"] for row in rows}["rescued"] == "1 of 2 runs"
    html = alice_client.get(config.get_absolute_url()).content.decode()
    assert "table F1" in html and "rescued (answered after the watchdog)" in html
    assert "57.7 [15.5\u2013100.0] % (n=2)" in html


def test_it_shows_agent_summaries_stored_before_f1_without_breaking(alice_client):
    a, b = EngineConfigFactory(), EngineConfigFactory()
    succeeded(a, "agent-table", OLD_AGENT_SUMMARY)
    succeeded(b, "agent-table", agent_summary(47, "completed", 60.0))
    assert alice_client.get(a.get_absolute_url()).status_code == 200
    response = compare_page(alice_client, a, b)
    assert response.status_code == 200
    agent = by_key(response.context["rows"], "Agent table")
    assert agent["score"]["a"]["text"] == "47 [47\u201347] rows (n=1)"
    assert (agent["f1"]["a"]["text"], agent["f1"]["verdict"]) == ("\u2014", "n/a")
    assert agent["exact"]["a"]["tally"] is None


def test_it_reads_the_compare_page_in_four_queries(alice_client, django_assert_max_num_queries):
    a, b = EngineConfigFactory(), EngineConfigFactory()
    speed_runs(a, *[40.0 + i for i in range(25)])
    speed_runs(b, *[41.0 + i for i in range(25)])
    # Session, user, the configs for the selects, the runs.
    with django_assert_max_num_queries(4):
        assert compare_page(alice_client, a, b).status_code == 200


def test_it_shows_the_scorecard_on_the_config_page(alice_client, config):
    html = alice_client.get(config.get_absolute_url()).content.decode()
    assert '<article id="scorecard">' in html
    assert "41.0 [40.0\u201342.0] tok/s (n=3)" in html
    assert "0.220 [0.200\u20130.250] s (n=3)" in html
    assert f"{reverse('runs:compare-configs')}?a={config.pk}" in html


def test_it_reads_the_config_page_in_as_many_queries_for_more_runs(
    alice_client, config, django_assert_max_num_queries
):
    url = config.get_absolute_url()
    with django_assert_max_num_queries(11) as few:
        alice_client.get(url)
    speed_runs(config, *[50.0] * 30)
    with django_assert_max_num_queries(len(few.captured_queries)):
        alice_client.get(url)


def test_it_shows_the_form_alone_until_two_configs_are_picked(alice_client, config):
    response = alice_client.get(reverse("runs:compare-configs"), {"a": config.pk})
    assert response.status_code == 200
    assert "rows" not in response.context
    assert f'<option value="{config.pk}" selected>' in response.content.decode()


def test_it_rejects_bad_config_ids_with_400(alice_client, config):
    url = reverse("runs:compare-configs")
    not_a_number = alice_client.get(url, {"a": "abc", "b": config.pk})
    unknown = alice_client.get(url, {"a": config.pk, "b": 999999})
    assert not_a_number.status_code == unknown.status_code == 400
    assert "config A: there is no config with id abc" in not_a_number.content.decode()
    assert "config B: there is no config with id 999999" in unknown.content.decode()


def test_it_redirects_anonymous_users_to_login(client, config):
    for url in (reverse("runs:compare-configs") + f"?a={config.pk}&b={config.pk}", config.get_absolute_url()):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith("/login/?next=")


def test_it_exports_the_scorecard_as_csv_and_json(alice_client, config):
    url = config.get_absolute_url()
    rows = alice_client.get(url, {"format": "json"}).json()["rows"]
    decode = next(r for r in rows if r["metric"] == "decode (client)")
    assert (decode["median"], decode["min"], decode["max"], decode["n"]) == (41.0, 40.0, 42.0, 3)
    lines = alice_client.get(url, {"format": "csv"}).content.decode().splitlines()
    assert lines[0] == "benchmark,metric,unit,median,min,max,n,count,runs,out_of,text"
    assert len(lines) == len(rows) + 1


def test_it_adds_correct_answers_per_minute_and_per_kj_after_a_quality_benchmark():
    config = EngineConfigFactory(name="frugal")
    summaries = [{"accuracy": 0.5, "total": 120, "telemetry": telemetry(0.5, 20.0)},
                 {"accuracy": 0.6, "total": 120, "telemetry": telemetry()}]
    for i, summary in enumerate(summaries):
        start = T0 + timedelta(minutes=10 * i)
        RunFactory(config=config, job="mmlu-pro", status=Run.Status.SUCCEEDED, summary=summary,
                   created=start, started=start, finished=start + timedelta(minutes=2))
    rows = {row["key"]: row for row in scorecard(config) if row["benchmark"] == "MMLU-Pro"}
    # 0.5 x 120 / 2 min and 0.6 x 120 / 2 min; per kJ only where energy exists: 0.5 x 1000 / 20 J.
    assert rows["correct_per_minute"]["text"] == "33.00 [30.00\u201336.00] per minute (n=2)"
    assert rows["correct_per_kj"]["text"] == "25.00 [25.00\u201325.00] per kJ (n=1)"
    assert list(rows)[-2:] == ["correct_per_minute", "correct_per_kj"]


def test_it_leaves_out_quality_per_kj_without_energy():
    config = EngineConfigFactory(name="unmetered")
    summary = {"accuracy": 0.5, "total": 10}
    RunFactory(config=config, job="mmlu-pro", status=Run.Status.SUCCEEDED, summary=summary,
               created=T0, started=T0, finished=T0 + timedelta(minutes=1))
    keys = [row["key"] for row in scorecard(config)]
    assert "correct_per_minute" in keys
    assert "correct_per_kj" not in keys


def test_it_diffs_the_two_configs_settings_on_the_compare_page(alice_client):
    a = EngineConfigFactory(lookahead=4, temperature=0.0)
    b = EngineConfigFactory(lookahead=8, temperature=0.0, quantization="Q8_0")
    response = compare_page(alice_client, a, b)
    assert response.context["setting_changes"] == [("quantization", "Q4_K_M", "Q8_0"), ("lookahead", 4, 8)]
    html = response.content.decode()
    assert "2 settings differ (A → B)" in html and "lookahead</strong>: 4 → 8" in html
