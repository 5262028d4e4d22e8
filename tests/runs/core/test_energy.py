import pytest

from runs.core.energy import Window, energy_summary, joules_over, merge, windows_of

pytestmark = pytest.mark.backend_free

# 10 Hz readings: 20 W idle until t=2 s, then 80 W.
POWER = [(i / 10, 20.0 if i < 20 else 80.0) for i in range(80)]


def test_it_computes_joules_per_token_with_the_idle_baseline_subtracted():
    # Two sequential requests, each 1 s of decode and 50 tokens, at 80 W over a 20 W baseline:
    # (80 - 20) W x 2 s / 100 tokens = 1.2 J per token.
    windows = [Window(2.0, 2.0, 3.0, 50, "tool-call", 1), Window(3.5, 3.6, 4.6, 50, "prose-en", 1)]
    energy = energy_summary(POWER, 20.0, windows)
    assert energy["j_per_token"] == pytest.approx(1.2)
    # Per request the whole request counts: 60 W x (1.0 s + 1.1 s) / 2 requests = 63 J.
    assert energy["j_per_request"] == pytest.approx(63.0)
    assert (energy["tokens"], energy["requests"], energy["decode_s"]) == (100, 2, pytest.approx(2.0))
    assert energy["by_output_type"]["prose-en"]["j_per_request"] == pytest.approx(66.0)
    assert energy["by_concurrency"]["1"]["j_per_token"] == pytest.approx(1.2)


def test_it_counts_overlapping_requests_once():
    # Four concurrent requests over the same second: 60 J over 4 x 25 tokens, not 4 x 60 J.
    windows = [Window(3.0, 3.0, 4.0, 25, None, 4) for _ in range(4)]
    energy = energy_summary(POWER, 20.0, windows)
    assert energy["j_per_token"] == pytest.approx(0.6)
    assert energy["j_per_request"] == pytest.approx(15.0)


def test_it_holds_each_reading_until_the_next_even_within_a_short_request():
    assert joules_over([(0.0, 10.0), (1.0, 30.0)], [(0.95, 1.05)], 0.0) == pytest.approx(2.0)
    assert joules_over([(5.0, 10.0), (6.0, 20.0)], [(0.0, 7.0)], 0.0) == pytest.approx(80.0)


def test_it_merges_overlapping_windows():
    assert merge([(3, 4), (1, 2), (1.5, 3.5), (5, 5)]) == [(1, 4)]


def test_it_takes_windows_from_request_rows_that_carry_their_start():
    rows = [
        {
            "start_t": 1.0,
            "ttft_s": 0.2,
            "e2e_s": 1.0,
            "output_tokens": 9,
            "output_type": "table",
            "concurrency": 2,
        },
        {"ttft_s": 0.1, "e2e_s": 1.0},
    ]
    assert windows_of(rows) == [Window(1.0, 1.2, 2.0, 9, "table", 2)]


def test_it_has_no_energy_without_requests():
    assert energy_summary(POWER, 20.0, []) is None
