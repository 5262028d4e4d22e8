from __future__ import annotations

import pytest

from runs.core.scoring.table import Group, chart_data, compare_groups, export_rows, pareto_front
from tests.factories import telemetry

pytestmark = pytest.mark.backend_free


def spread(median, width=1.0, n=9):
    return {"median": median, "min": median - width, "max": median + width, "n": n}


def speed(tps):
    return {"decode_tps_client": spread(tps), "ttft_s": spread(0.2, 0.01)}


def sweep(totals):
    return {"levels": {str(c): {"total_tps": spread(v, 0.5, 1), "finish_s": spread(c, 0.1, c)}
                       for c, v in totals.items()}}


def test_it_keeps_the_points_no_other_beats_on_both_axes():
    points = [(40.0, 46.0), (42.0, 42.0), (61.0, 44.0), (61.0, 40.0), (30.0, 46.0)]
    assert pareto_front(points) == [0, 2]
    # Equal points don't dominate each other.
    assert pareto_front([(1.0, 1.0), (1.0, 1.0)]) == [0, 1]


def test_it_compares_every_config_with_the_baseline():
    groups = [
        Group(1, "a", [(1, "speed", speed(40.0)), (2, "speed", speed(42.0))]),
        Group(2, "b", [(3, "speed", speed(60.0)), (4, "speed", speed(62.0))]),
        Group(3, "c", []),
    ]
    rows = compare_groups(groups, baseline_id=2)
    decode = next(r for r in rows if r["key"] == "decode_tps_client")
    assert [c["verdict"] for c in decode["cells"]] == ["worse", "baseline", "n/a"]
    assert decode["cells"][0]["delta_text"] == "-20.0 tok/s"
    assert decode["cells"][2]["text"] == "\u2014"
    # Benchmarks nobody ran are left out.
    assert {r["benchmark"] for r in rows} == {"Speed"}


def test_it_compares_concurrency_levels_and_draws_their_curves():
    a = [sweep({1: 40.0, 4: 100.0}), sweep({1: 41.0, 4: 101.0})]
    b = [sweep({1: 40.5, 4: 150.0}), sweep({1: 40.5, 4: 151.0})]
    groups = [Group(1, "a", [(i, "concurrency", s) for i, s in enumerate(a)]),
              Group(2, "b", [(i + 2, "concurrency", s) for i, s in enumerate(b)])]
    rows = compare_groups(groups, baseline_id=1)
    by_key = {r["key"]: r for r in rows}
    assert list(by_key) == ["total_tps@1", "finish_s@1", "total_tps@4", "finish_s@4"]
    assert by_key["total_tps@1"]["cells"][1]["verdict"] == "noise"
    at_4 = by_key["total_tps@4"]["cells"][1]
    assert (at_4["text"], at_4["delta_text"], at_4["verdict"]) == (
        "150.5 [150.0\u2013151.0] tok/s (n=2)", "+50.0 tok/s", "better")
    charts = chart_data(groups, rows, 1)
    assert charts["concurrency"][1]["points"] == [
        {"x": 1, "y": 40.5, "min": 40.5, "max": 40.5}, {"x": 4, "y": 150.5, "min": 150.0, "max": 151.0}]
    assert charts["decode"] == [] and charts["scatter"] is None


def test_it_plots_speed_against_the_quality_metric_most_configs_have():
    groups = [
        Group(1, "a", [(1, "speed", speed(40.0)), (2, "agent-table", {"score": 47, "rows": 47, "f1": 1.0})]),
        Group(2, "b", [(3, "speed", speed(60.0)), (4, "agent-table", {"score": 47, "rows": 47, "f1": 0.5}),
                       (5, "mmlu-pro", {"accuracy": 0.5})]),
    ]
    scatter = chart_data(groups, compare_groups(groups, 1), 1)["scatter"]
    assert scatter["label"] == "agent table F1, %"
    assert [(p["config"], p["x"], p["y"], p["front"]) for p in scatter["points"]] == [
        ("a", 40.0, 100.0, True), ("b", 60.0, 50.0, True)]


def test_it_exports_figures_in_the_unit_shown():
    groups = [Group(1, "a", [(1, "mmlu-pro", {"accuracy": 0.4}), (2, "mmlu-pro", {"accuracy": 0.42})]),
              Group(2, "b", [(3, "mmlu-pro", {"accuracy": 0.5}), (4, "mmlu-pro", {"accuracy": 0.52})])]
    rows = export_rows(groups, compare_groups(groups, 1))
    b = next(r for r in rows if r["config"] == "b")
    assert (b["median"], b["min"], b["n"], b["delta_unit"], b["verdict"]) == (51.0, 50.0, 2, "pp", "better")
    assert round(b["delta"], 6) == 10.0


def with_positions(tps, positions):
    return speed(tps) | {"acceptance_by_position": positions}


def test_it_compares_acceptance_at_each_draft_position_after_the_speed_rows():
    groups = [
        Group(1, "a", [(1, "speed", with_positions(40.0, [0.80, 0.60])),
                       (2, "speed", with_positions(41.0, [0.82, 0.62]))]),
        Group(2, "b", [(3, "speed", with_positions(60.0, [0.90, 0.75, 0.60, 0.45])),
                       (4, "speed", with_positions(61.0, [0.92, 0.77, 0.62, 0.47])),
                       (5, "speed", speed(62.0))]),  # an engine that exposes none: left out
    ]
    rows = compare_groups(groups, baseline_id=1)
    keys = [r["key"] for r in rows]
    positions = [f"acceptance_pos_{i}" for i in (1, 2, 3, 4)]
    assert keys[keys.index("acceptance_pos_1"):] == positions
    by_key = {r["key"]: r for r in rows}
    first = by_key["acceptance_pos_1"]
    assert (first["benchmark"], first["label"], first["unit"]) == (
        "Speed", "acceptance at draft position 1", "%")
    a, b = first["cells"]
    assert (a["text"], b["text"]) == ("81.0 [80.0\u201382.0] % (n=2)", "91.0 [90.0\u201392.0] % (n=2)")
    assert (b["delta_text"], b["verdict"], b["runs"]) == ("+10.0 pp", "better", 2)
    # Only b drafted 4 tokens: a's cell at position 4 has no figure.
    a4, b4 = by_key["acceptance_pos_4"]["cells"]
    assert (a4["text"], a4["runs"], b4["verdict"]) == ("\u2014", 0, "n/a")


def test_it_exports_acceptance_by_position_in_percent_with_deltas_in_points():
    runs = {"a": [(1, 40.0, 0.80), (2, 41.0, 0.82)], "b": [(3, 60.0, 0.90), (4, 61.0, 0.92)]}
    groups = [Group(i, name, [(run, "speed", with_positions(tps, [p])) for run, tps, p in runs[name]])
              for i, name in enumerate(runs, 1)]
    exported = export_rows(groups, compare_groups(groups, 1))
    b = next(r for r in exported if r["metric"] == "acceptance_pos_1" and r["config"] == "b")
    figures = (b["unit"], b["median"], b["min"], b["max"], b["n"], b["delta_unit"])
    assert figures == ("%", 91.0, 90.0, 92.0, 2, "pp")
    assert round(b["delta"], 6) == 10.0 and b["figure"] == "91.0 [90.0\u201392.0] % (n=2)"


def test_it_has_no_position_rows_without_per_position_figures():
    groups = [Group(1, "a", [(1, "speed", speed(40.0))]), Group(2, "b", [(2, "speed", speed(41.0))])]
    assert not [r for r in compare_groups(groups, 1) if r["key"].startswith("acceptance_pos_")]


def test_it_adds_energy_rows_with_the_note_where_a_config_has_none():
    groups = [
        Group(1, "a", [(1, "speed", speed(40.0) | {"telemetry": telemetry(1.0, 50.0)}),
                       (2, "speed", speed(41.0) | {"telemetry": telemetry(2.0, 70.0)})]),
        Group(2, "b", [(3, "speed", speed(60.0) | {"telemetry": telemetry()})]),
    ]
    rows = {r["key"]: r for r in compare_groups(groups, baseline_id=1) if r["benchmark"] == "Energy"}
    assert list(rows) == ["j_per_token@speed", "j_per_request@speed"]
    per_token = rows["j_per_token@speed"]
    assert per_token["higher_is_better"] is False
    assert per_token["cells"][0]["text"] == "1.500 [1.000\u20132.000] J (n=2)"
    none = per_token["cells"][1]
    assert (none["text"], none["title"]) == ("\u2014", "no power reading on this machine")
    assert per_token["cells"][0]["title"] == ""


def test_it_adds_no_energy_rows_without_telemetry():
    rows = compare_groups([Group(1, "a", [(1, "speed", speed(40.0))])], baseline_id=1)
    assert not [r for r in rows if r["benchmark"] == "Energy"]
