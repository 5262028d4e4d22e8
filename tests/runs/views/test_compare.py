from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from runs.models import Run
from tests.factories import (
    EngineConfigFactory,
    SweepExecutionFactory,
    request_outcomes,
    telemetry,
    throttled_warning,
)
from tests.runs.compare_helpers import full_comparison, speed_runs, speed_summary, succeeded, three_configs

pytestmark = pytest.mark.django_db

EN_DASH = "\u2013"


def compare(client, **params):
    return client.get(reverse("runs:compare"), {k: str(v) for k, v in params.items()})


def ids(*objects):
    return ",".join(str(o.pk) for o in objects)


def cells(response, benchmark="Speed", key="decode_tps_client"):
    """The row's cells by config name."""
    comparison = response.context["comparison"]
    row = next(r for r in comparison.rows if (r["benchmark"], r["key"]) == (benchmark, key))
    return {config.name: cell for config, cell in zip(comparison.configs, row["cells"], strict=True)}


def fig(median, low, high, n, unit="tok/s"):
    return f"{median} [{low}{EN_DASH}{high}] {unit} (n={n})"


def test_it_shows_every_config_as_median_min_max_and_n_against_the_first(alice_client):
    base, near, fast = three_configs()
    response = compare(alice_client, configs=ids(base, near, fast))
    assert response.status_code == 200
    decode = cells(response)
    assert decode["base"]["text"] == fig("41.0", "40.0", "42.0", 3)
    assert decode["near"]["text"] == fig("42.0", "41.0", "43.0", 3)
    assert decode["fast"]["text"] == fig("61.0", "60.0", "62.0", 3)
    assert decode["base"]["verdict"] == "baseline"
    assert (decode["near"]["delta_text"], decode["near"]["delta_pct_text"]) == ("+1.0 tok/s", "+2.4 %")
    assert (decode["fast"]["delta_text"], decode["fast"]["delta_pct_text"]) == ("+20.0 tok/s", "+48.8 %")
    assert (decode["near"]["verdict"], decode["fast"]["verdict"]) == ("noise", "better")
    acceptance = cells(response, key="acceptance_rate")
    assert acceptance["fast"]["text"] == fig("80.0", "80.0", "80.0", 3, "%")
    assert acceptance["near"]["verdict"] == acceptance["fast"]["verdict"] == "n/a"
    html = response.content.decode()
    assert fig("61.0", "60.0", "62.0", 3) in html
    assert '+20.0 tok/s (+48.8 %)</span>' in html
    noise = ("verdict-noise\" title=\"the medians' 95 % intervals (or, without them, the "
             f"[min{EN_DASH}max] ranges) overlap the baseline's\">noise</span>")
    assert noise in html
    assert 'class="verdict verdict-better"' in html
    hover = f"95 % CI 60.0{EN_DASH}62.0 tok/s; p90 of 3 runs = max 62.0; p99 of 3 runs = max 62.0"
    assert f'title="{hover}">{fig("61.0", "60.0", "62.0", 3)}</span>' in html


def steady_runs(config, median, outlier):
    # 19 runs close to the median and one far off: a wide range, a narrow interval of the median.
    return speed_runs(config, *[median + (i - 9) * 0.05 for i in range(19)], outlier)


def test_it_follows_the_intervals_when_the_medians_differ_but_the_intervals_overlap(alice_client):
    base, near, apart = (EngineConfigFactory(name=name) for name in ("base", "near", "apart"))
    steady_runs(base, 40.0, 30.0)
    steady_runs(near, 40.2, 30.0)  # a higher median, its interval overlapping base's
    steady_runs(apart, 41.0, 30.0)  # its range still overlaps base's: the range rule said noise
    decode = cells(compare(alice_client, configs=ids(base, near, apart)))
    assert decode["near"]["delta_text"] == "+0.2 tok/s"
    assert decode["near"]["verdict"] == "noise"
    assert decode["apart"]["verdict"] == "better"


@pytest.mark.parametrize(
    ("baseline", "expected"),
    [
        ("fast", {"base": ("-20.0 tok/s", "-32.8 %", "worse"), "near": ("-19.0 tok/s", "-31.1 %", "worse")}),
        ("near", {"base": ("-1.0 tok/s", "-2.4 %", "noise"), "fast": ("+19.0 tok/s", "+45.2 %", "better")}),
    ],
)
def test_it_measures_deltas_against_the_chosen_baseline(alice_client, baseline, expected):
    configs = {c.name: c for c in three_configs()}
    response = compare(alice_client, configs=ids(*configs.values()), baseline=configs[baseline].pk)
    decode = cells(response)
    assert response.context["comparison"].baseline.name == baseline
    assert decode[baseline]["verdict"] == "baseline"
    for name, (delta, pct, verdict) in expected.items():
        assert (decode[name]["delta_text"], decode[name]["delta_pct_text"], decode[name]["verdict"]) == (
            delta, pct, verdict)


def test_it_groups_picked_runs_by_config_in_the_order_given(alice_client):
    base, fast = EngineConfigFactory(name="base"), EngineConfigFactory(name="fast")
    b1, b2, _ = speed_runs(base, 40.0, 41.0, 42.0)
    (f1,) = speed_runs(fast, 60.0)
    response = compare(alice_client, runs=ids(f1, b1, b2))
    comparison = response.context["comparison"]
    assert [c.name for c in comparison.configs] == ["fast", "base"]
    decode = cells(response)
    assert decode["base"]["text"] == fig("40.5", "40.0", "41.0", 2)
    assert decode["fast"]["text"] == fig("60.0", "60.0", "60.0", 1)
    # One run on the baseline's side: noise can't be judged.
    assert (decode["base"]["delta_text"], decode["base"]["verdict"]) == ("-19.5 tok/s", "no spread")


def test_it_groups_all_runs_of_a_sweep_run_and_lists_the_left_out(alice_client):
    base, near, other = (EngineConfigFactory(name=name) for name in ("base", "near", "other"))
    execution = SweepExecutionFactory()
    speed_runs(base, 40.0, 41.0, execution=execution)
    speed_runs(near, 50.0, 51.0, execution=execution)
    failed = succeeded(near, "speed", {}, minute=5, execution=execution, status=Run.Status.FAILED)
    speed_runs(other, 99.0)
    response = compare(alice_client, sweep_runs=execution.pk)
    comparison = response.context["comparison"]
    assert [c.name for c in comparison.configs] == ["base", "near"]
    assert cells(response)["near"]["text"] == fig("50.5", "50.0", "51.0", 2)
    assert [(run.pk, why) for run, why in comparison.left_out] == [(failed.pk, "failed")]
    assert f'<a href="/runs/{failed.pk}/">#{failed.pk}</a> (failed)' in response.content.decode()


def test_it_takes_the_latest_succeeded_runs_of_picked_configs(alice_client):
    config = EngineConfigFactory(name="base")
    speed_runs(config, *[float(v) for v in range(1, 26)])
    succeeded(config, "speed", {"decode_tps_client": {"median": 999.0}}, minute=60,
              status=Run.Status.FAILED)
    decode = cells(compare(alice_client, configs=config.pk))
    assert decode["base"]["text"] == fig("15.5", "6.0", "25.0", 20)


def test_it_shows_the_form_alone_without_a_selection(alice_client):
    config = EngineConfigFactory(name="base")
    response = compare(alice_client)
    assert response.status_code == 200
    assert "comparison" not in response.context
    assert f'<option value="{config.pk}">base (' in response.content.decode()


def test_it_leaves_out_runs_of_jobs_it_does_not_compare(alice_client):
    config = EngineConfigFactory(name="base")
    (speed,) = speed_runs(config, 40.0)
    lookahead = succeeded(config, "lookahead", {"lengths": {}}, minute=3)
    comparison = compare(alice_client, runs=ids(speed, lookahead)).context["comparison"]
    assert [run.pk for run in comparison.runs] == [speed.pk]
    left_out = [(run.pk, why) for run, why in comparison.left_out]
    assert left_out == [(lookahead.pk, "lookahead runs are not compared")]


def test_it_shows_an_empty_sweep_run_as_nothing_to_compare(alice_client):
    response = compare(alice_client, sweep_runs=SweepExecutionFactory().pk)
    assert response.status_code == 200
    assert "No runs to compare yet." in response.content.decode()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"runs": "abc"}, "runs: abc is not an id"),
        ({"runs": "1,-2"}, "runs: -2 is not an id"),
        ({"runs": "9" * 30}, f"runs: {'9' * 30} is not an id"),
        ({"runs": "999999"}, "runs: there is no run with id 999999"),
        ({"configs": "999999"}, "configs: there is no config with id 999999"),
        ({"sweep_runs": "999999"}, "sweep_runs: there is no sweep run with id 999999"),
        ({"baseline": "x"}, "baseline: x is not an id"),
    ],
)
def test_it_rejects_bad_ids_with_a_400_naming_the_parameter(alice_client, params, message):
    config = EngineConfigFactory()
    speed_runs(config, 40.0)
    response = compare(alice_client, **({"configs": config.pk} | params))
    assert response.status_code == 400
    assert f'<p class="error" role="alert" id="compare-error">{message}</p>' in response.content.decode()


def test_it_rejects_a_baseline_that_is_not_compared(alice_client):
    compared, other = EngineConfigFactory(), EngineConfigFactory()
    response = compare(alice_client, configs=compared.pk, baseline=other.pk)
    assert response.status_code == 400
    assert f"baseline: config {other.pk} is not among the compared configs" in response.content.decode()


def test_it_redirects_anonymous_users_to_login(client):
    config = EngineConfigFactory()
    for fmt in ("", "csv", "html"):
        response = compare(client, configs=config.pk, format=fmt)
        assert response.status_code == 302
        assert response.url.startswith("/login/?next=")


def test_it_exports_the_table_as_csv_and_json_with_the_same_figures(alice_client):
    base, near, fast = three_configs()
    query = {"configs": ids(base, near, fast)}
    page = compare(alice_client, **query)
    as_csv = compare(alice_client, **query, format="csv")
    as_json = compare(alice_client, **query, format="json")
    assert as_csv["Content-Disposition"] == 'attachment; filename="sparkdash-compare.csv"'
    csv_rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    json_rows = json.loads(as_json.content)["rows"]
    assert len(csv_rows) == len(json_rows) == 3 * len(page.context["comparison"].rows)
    by_config = {r["config"]: r for r in json_rows if r["metric"] == "decode_tps_client"}
    assert by_config["fast"] | {"config_id": 0} == by_config["fast"] | {
        "benchmark": "Speed", "unit": "tok/s", "baseline": False, "runs": 3, "median": 61.0, "min": 60.0,
        "max": 62.0, "n": 3, "figure": fig("61.0", "60.0", "62.0", 3), "delta": 20.0, "delta_unit": "tok/s",
        "verdict": "better", "config_id": 0,
    }
    assert by_config["fast"]["delta_pct"] == pytest.approx(20 / 41 * 100)
    assert by_config["base"]["verdict"] == "baseline"
    csv_fast = next(r for r in csv_rows if r["metric"] == "decode_tps_client" and r["config"] == "fast")
    assert (csv_fast["median"], csv_fast["delta"], csv_fast["verdict"]) == ("61.0", "20.0", "better")
    assert csv_fast["figure"] == cells(page)["fast"]["text"]
    # Shares are exported in the unit shown: acceptance 80 %, its delta in percentage points.
    accept = next(r for r in json_rows if r["metric"] == "acceptance_rate" and r["config"] == "fast")
    assert (accept["median"], accept["unit"], accept["delta_unit"]) == (80.0, "%", "pp")


def test_it_embeds_the_chart_data(alice_client):
    base, near, fast = full_comparison()
    response = compare(alice_client, configs=ids(base, near, fast))
    charts = json.loads(response.context["comparison"].charts and _json_script(response))
    assert [b["median"] for b in charts["decode"]] == [41.0, 42.0, 61.0]
    assert [(b["config"], b["median"]) for b in charts["acceptance"]] == [("near", 60.0), ("fast", 80.0)]
    assert [len(curve["points"]) for curve in charts["concurrency"]] == [4, 4, 4]
    assert charts["concurrency"][0]["points"][0] == {"x": 1, "y": 40.5, "min": 40.0, "max": 41.0}
    scatter = charts["scatter"]
    assert scatter["label"] == "MMLU-Pro accuracy, %"
    front = [(p["config"], p["front"]) for p in scatter["points"]]
    assert front == [("base", True), ("near", False), ("fast", True)]
    assert [p["config"] for p in scatter["front"]] == ["base", "fast"]
    table = cells(response, "Concurrency", "total_tps@8")
    at_8 = 40 * 8 ** 0.6  # 139.3 and 140.3 tok/s over the two sweeps
    assert table["base"]["text"] == fig(f"{at_8 + 0.5:.1f}", f"{at_8:.1f}", f"{at_8 + 1:.1f}", 2)
    assert table["fast"]["verdict"] == "better"


def _json_script(response):
    html = response.content.decode()
    start = html.index('<script id="compare-data" type="application/json">') + len(
        '<script id="compare-data" type="application/json">')
    return html[start:html.index("</script>", start)]


def test_it_reads_the_page_in_as_many_queries_for_more_runs(alice_client, django_assert_max_num_queries):
    base, near, fast = full_comparison()
    execution = SweepExecutionFactory()
    picked = speed_runs(near, 50.0, 51.0, execution=execution)
    query = {"configs": ids(base, fast), "runs": ids(*picked), "sweep_runs": execution.pk}
    # Session, user, the form's configs; picked runs; sweep runs (ids, runs); configs' latest runs.
    with django_assert_max_num_queries(7) as few:
        assert compare(alice_client, **query).status_code == 200
    for config in (base, near, fast):
        speed_runs(config, *[50.0] * 30)
    speed_runs(near, *[50.0] * 10, execution=execution)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert compare(alice_client, **query).status_code == 200
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert compare(alice_client, **query, format="csv").status_code == 200


def test_it_shows_and_exports_acceptance_at_each_draft_position(alice_client):
    near, fast = EngineConfigFactory(name="near", lookahead=2), EngineConfigFactory(name="fast", lookahead=4)
    speed_runs(near, 41.0, 42.0, acceptance=0.6, positions=[0.8, 0.6])
    speed_runs(fast, 60.0, 61.0, acceptance=0.7, positions=[0.9, 0.75, 0.6, 0.45])
    query = {"configs": ids(near, fast)}
    response = compare(alice_client, **query)
    first = cells(response, key="acceptance_pos_1")
    assert (first["near"]["text"], first["fast"]["text"]) == (fig("80.0", "80.0", "80.0", 2, "%"),
                                                              fig("90.0", "90.0", "90.0", 2, "%"))
    assert first["fast"]["delta_text"] == "+10.0 pp"
    html = response.content.decode()
    for i in (1, 2, 3, 4):
        assert f'data-metric="Speed/acceptance_pos_{i}"' in html
    assert "acceptance at draft position 4" in html
    rows = json.loads(compare(alice_client, **query, format="json").content)["rows"]
    exported = {(r["metric"], r["config"]): r["median"] for r in rows}
    assert exported[("acceptance_pos_4", "fast")] == pytest.approx(45.0)
    assert exported[("acceptance_pos_4", "near")] is None
    as_csv = compare(alice_client, **query, format="csv").content.decode()
    assert "Speed,acceptance_pos_2,acceptance at draft position 2,%,fast," in as_csv


def test_it_marks_a_throttled_config_and_shows_its_energy(alice_client):
    hot = EngineConfigFactory(name="hot")
    cool = EngineConfigFactory(name="cool")
    succeeded(hot, "speed", speed_summary(40.0) | {"telemetry": telemetry(1.25, 60.0, throttled_s=12.3)},
              warnings=[throttled_warning(12.3)])
    succeeded(cool, "speed", speed_summary(41.0) | {"telemetry": telemetry()})
    response = compare(alice_client, configs=ids(hot, cool))
    columns = dict((c.name, mark) for c, mark, _, _, _ in response.context["comparison"].columns)
    assert columns["hot"]["text"] == "throttled 12.3 s"
    assert columns["cool"] is None
    html = response.content.decode()
    assert "\u26a0 throttled 12.3 s</span>" in html
    assert "may show the heat, not the config" in html
    energy = cells(response, "Energy", "j_per_token@speed")
    assert energy["hot"]["text"] == "1.250 [1.250\u20131.250] J (n=1)"
    assert 'title="no power reading on this machine">\u2014</span>' in html


def test_it_marks_a_config_whose_run_was_client_bound_in_english_and_in_japanese(alice_client):
    starved = EngineConfigFactory(name="starved")
    quiet = EngineConfigFactory(name="quiet")
    bound = {"kind": "client-bound", "message": "these figures may be the tool's, not the engine's: ..."}
    run = succeeded(starved, "speed", speed_summary(40.0), warnings=[bound])
    succeeded(quiet, "speed", speed_summary(41.0))
    response = compare(alice_client, configs=ids(starved, quiet))
    marks = {c.name: mark for c, _, _, mark, _ in response.context["comparison"].columns}
    assert marks["starved"]["text"] == "client-bound"
    assert f"may have set the pace of run #{run.pk}" in marks["starved"]["title"]
    assert marks["quiet"] is None
    html = response.content.decode()
    assert html.count("data-client-bound") == 1 and "\u26a0 client-bound</span>" in html
    japanese = alice_client.get(reverse("runs:compare"), {"configs": ids(starved, quiet)},
                                HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "\u26a0 クライアント律速</span>" in japanese


def test_it_marks_a_config_whose_run_lost_a_quarter_of_its_requests(alice_client):
    flaky = EngineConfigFactory(name="flaky")
    steady = EngineConfigFactory(name="steady")
    succeeded(flaky, "speed", speed_summary(40.0) | {"outcomes": request_outcomes(12, 3)})
    succeeded(steady, "speed", speed_summary(41.0) | {"outcomes": request_outcomes(12, 1)})
    response = compare(alice_client, configs=ids(flaky, steady))
    columns = {c.name: failed for c, _, failed, _, _ in response.context["comparison"].columns}
    assert columns["flaky"]["text"] == "25 % of requests failed"
    assert "3 of 12 requests failed (25.0 %: http 500 3)" in columns["flaky"]["title"]
    assert columns["steady"] is None  # 1 of 12 is under the 10 % mark
    decode = cells(response, "Speed", "decode_tps_client")
    assert (decode["flaky"]["over"], decode["flaky"]["failed"]) == ("over 9 of 12 requests", True)
    assert (decode["steady"]["over"], decode["steady"]["failed"]) == ("over 11 of 12 requests", True)
    html = response.content.decode()
    assert "\u26a0 25 % of requests failed</span>" in html
    assert "<small class=\"meta\" data-over>over 9 of 12 requests</small>" in html
    rows = json.loads(compare(alice_client, configs=ids(flaky, steady), format="json").content)["rows"]
    exported = {(r["metric"], r["config"]): r["over"] for r in rows}
    assert exported[("decode_tps_client", "flaky")] == "over 9 of 12 requests"


def test_it_compares_only_the_revision_a_config_ran_most_recently(alice_client):
    edited, other = EngineConfigFactory(name="edited", lookahead=4), EngineConfigFactory(name="other")
    speed_runs(edited, 40.0, 41.0, 42.0)
    edited.lookahead = 8
    edited.save()
    succeeded(edited, "speed", speed_summary(80.0), minute=30)  # after r1's three
    speed_runs(other, 50.0)
    rows = json.loads(compare(alice_client, configs=ids(edited, other), format="json").content)["rows"]
    decode = {r["config"]: r for r in rows if r["metric"] == "decode_tps_client"}
    assert (decode["edited"]["median"], decode["edited"]["n"]) == (80.0, 1)  # r2 only, not pooled with r1
