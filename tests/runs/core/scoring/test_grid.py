from __future__ import annotations

from runs.core.scoring.grid import GridRun, build_grid
from tests.factories import request_outcomes, telemetry, throttled_warning


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
