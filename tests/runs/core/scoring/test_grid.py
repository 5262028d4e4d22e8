from __future__ import annotations

import pytest

from runs.core.scoring.grid import GridRun, build_grid
from tests.factories import request_outcomes, telemetry, throttled_warning

pytestmark = pytest.mark.backend_free


def speed(tps, **extra):
    return {"decode_tps_client": {"median": tps, "min": tps, "max": tps, "n": 1}} | extra


def test_it_marks_a_cell_whose_run_throttled_with_the_longest_throttle():
    runs = [
        GridRun(1, 10, "speed", "succeeded", speed(40.0, telemetry=telemetry(throttled_s=3.0))),
        GridRun(2, 10, "speed", "succeeded", speed(41.0), [throttled_warning(12.3)]),
        GridRun(3, 20, "speed", "succeeded", speed(42.0, telemetry=telemetry())),
    ]
    grid = build_grid([{"id": 10}, {"id": 20}], [("speed", "Speed")], runs, baseline_id=None)
    hot, cool = (row["cells"][0] for row in grid["rows"])
    assert (hot["throttled_s"], hot["throttle_text"]) == (12.3, "throttled 12.3 s")
    assert "#1 3.0 s, #2 12.3 s" in hot["throttle_title"]
    assert (cool["throttled_s"], cool["throttle_text"], cool["throttle_title"]) == (None, "", "")


def _cell_runs(config_id: int, first_id: int, values: list[float]) -> list[GridRun]:
    return [GridRun(first_id + i, config_id, "speed", "succeeded", speed(v)) for i, v in enumerate(values)]


def _steady(median: float, outlier: float) -> list[float]:
    # 19 runs close to the median and one far off: a wide range, a narrow interval.
    return [median + (i - 9) * 0.05 for i in range(19)] + [outlier]


def test_it_calls_a_cell_better_when_the_intervals_are_apart_though_the_ranges_overlap():
    runs = _cell_runs(10, 1, _steady(40.0, 30.0)) + _cell_runs(20, 100, _steady(42.0, 35.0))
    grid = build_grid([{"id": 10}, {"id": 20}], [("speed", "Speed")], runs, baseline_id=10)
    base, other = (row["cells"][0] for row in grid["rows"])
    assert other["spread"]["min"] <= base["spread"]["max"]  # the range rule would say noise
    assert other["verdict"] == "better"
    assert other["interval"].startswith("95 % CI ")
    assert other["interval"].endswith("p99 of 20 runs = max 42.5")


def test_it_calls_overlapping_intervals_of_cells_noise():
    runs = _cell_runs(10, 1, _steady(40.0, 30.0)) + _cell_runs(20, 100, _steady(40.2, 30.0))
    grid = build_grid([{"id": 10}, {"id": 20}], [("speed", "Speed")], runs, baseline_id=10)
    assert grid["rows"][1]["cells"][0]["verdict"] == "noise"


def test_it_marks_a_cell_whose_run_lost_over_a_tenth_of_its_requests():
    runs = [
        GridRun(1, 10, "speed", "succeeded", speed(40.0, outcomes=request_outcomes(12, 3, "stream cut"))),
        GridRun(2, 10, "speed", "succeeded", speed(41.0, outcomes=request_outcomes(12, 0))),
        GridRun(3, 20, "speed", "succeeded", speed(42.0, outcomes=request_outcomes(10, 1))),
    ]
    grid = build_grid([{"id": 10}, {"id": 20}], [("speed", "Speed")], runs, baseline_id=None)
    flaky, fine = (row["cells"][0] for row in grid["rows"])
    assert flaky["failed_text"] == "25 % of requests failed"
    assert "#1 3 of 12 requests failed (25.0 %: stream cut 3)" in flaky["failed_title"]
    assert (fine["failed_text"], fine["failed_title"]) == ("", "")
