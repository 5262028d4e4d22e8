"""`make bench-peers`' arithmetic (tests/bench/peer_race.py) and the worker row's plan, without an engine."""

from __future__ import annotations

import pytest

from tests.bench import peer_race, peer_tools, peer_worker, peers
from tests.bench.peer_race import cpu_per_1k, verdict

pytestmark = pytest.mark.backend_free


def test_it_names_the_rows_as_users_see_them():
    assert (peer_race.WORKER, peer_race.CORE) == ("SparkDash (worker)", "SparkDash (core)")
    assert peer_race.RACED == peer_race.WORKER
    assert next(iter(peer_tools.ready(install=False))) == peer_race.CORE


def test_it_takes_cpu_per_1k_tokens_from_the_difference():
    assert cpu_per_1k(3.0, 4.5, 3072) == pytest.approx(1.5 / 3.072)


@pytest.mark.parametrize("large", [2.9, 3.0])
def test_it_gives_no_cpu_figure_when_the_difference_is_not_positive(large):
    assert cpu_per_1k(3.0, large, 2048) is None


def test_it_refuses_a_larger_run_without_more_tokens():
    with pytest.raises(ValueError, match="more tokens"):
        cpu_per_1k(1.0, 2.0, 0)


def test_it_takes_the_median_of_each_repeats_ratio():
    ours = [0.6, 0.9, 0.5]
    peers_by_repeat = [[0.3, 0.5], [0.3, 0.4], [0.5, None]]
    found = verdict(ours, peers_by_repeat, by_size=False)
    assert found is not None
    # Ratios per repeat: 0.6/0.3 = 2, 0.9/0.3 = 3, 0.5/0.5 = 1; their median, not the medians' ratio.
    assert found.ratio == pytest.approx(2.0)
    assert (found.ours, found.best, found.repeats) == (0.6, 0.3, 3)


def test_it_prints_a_separable_goal_in_the_race_format():
    found = verdict([0.595, 0.6, 0.59], [[0.275, 0.4], [0.28, 0.3], [0.27, 0.5]], by_size=False)
    assert found is not None and found.separable
    assert found.line(1, "CPU per 1k tokens") == (
        "1 stream(s), CPU per 1k tokens: SparkDash 0.595, best peer 0.275, ratio 2.16 (not met), "
        "median of 3 repeats"
    )


def test_it_keeps_todays_format_for_one_run():
    found = verdict([0.595], [[0.275, 0.3]], by_size=False)
    assert found is not None
    assert found.line(1, "CPU per 1k tokens") == (
        "1 stream(s), CPU per 1k tokens: SparkDash 0.595, best peer 0.275, ratio 2.16 (not met)"
    )


def test_it_says_not_separable_when_the_spread_exceeds_the_gap():
    # SparkDash 5..9 ms (median 6), best peer 5.5..6 ms: the spread (4) dwarfs the gap (0.5).
    found = verdict([5.0, 6.0, 9.0], [[6.0], [5.5], [5.8]], by_size=True)
    assert found is not None and not found.separable
    line = found.line(4, "TTFT offset")
    assert "not separable" in line and "ratio" not in line.split("not separable")[0]
    assert "(met)" not in line and "(not met)" not in line


def test_it_compares_offsets_by_size():
    found = verdict([-2.0], [[4.0, -3.0]], by_size=True)
    assert found is not None
    assert found.best == -3.0 and found.ratio == pytest.approx(2 / 3)


def test_it_leaves_out_repeats_without_both_figures():
    assert verdict([None, None], [[1.0], [2.0]], by_size=False) is None
    found = verdict([None, 1.0], [[1.0], [None, 2.0]], by_size=False)
    assert found is not None and found.repeats == 1 and found.ratio == 0.5


def test_it_prints_the_closing_lines_from_the_worker_row(capsys):
    entries = [
        peers.Entry(tool, streams, 100, 100, 50 + offset, 50, cpu)
        for streams in peers.STREAMS
        for tool, offset, cpu in ((peer_race.WORKER, 8, 0.6), (peer_race.CORE, 1, 0.1), ("guidellm", 4, 0.3))
    ]
    lines = peers._print_table(entries)
    assert lines[:2] == [
        "1 stream(s), TTFT offset: SparkDash 8.000, best peer 4.000, ratio 2.00 (not met)",
        "1 stream(s), CPU per 1k tokens: SparkDash 0.600, best peer 0.300, ratio 2.00 (not met)",
    ]
    assert len(lines) == 2 * len(peers.STREAMS) == 6


@pytest.mark.parametrize(
    ("streams", "requests", "plan"), [(1, 8, (1, 8)), (1, 104, (8, 13)), (4, 104, (2, 13)), (16, 112, (1, 7))]
)
def test_it_plans_the_worker_run_within_the_jobs_limits(streams, requests, plan):
    assert peer_worker.rounds(streams, requests) == plan


@pytest.mark.parametrize("short", [False, True])
def test_it_sizes_each_levels_extra_requests_as_whole_rounds_the_worker_can_send(short):
    for streams in peers.STREAMS:
        requests, extra = peers._requests(streams, short), peers.extra_requests(streams, short)
        assert extra % streams == 0
        for total in (requests, requests + extra):
            passes, reps = peer_worker.rounds(streams, total)
            assert passes * reps * streams == total
    assert peers.extra_requests(16, False) == 4 * peers.extra_requests(1, False) == 384


@pytest.mark.parametrize("short", [False, True])
def test_it_sizes_the_retry_of_each_level_as_whole_rounds_the_worker_can_send(short):
    for streams in peers.STREAMS:
        total = peers._requests(streams, short) + peers.RETRY_FACTOR * peers.extra_requests(streams, short)
        passes, reps = peer_worker.rounds(streams, total)
        assert passes * reps * streams == total


def _runner(cpu_by_requests, calls):
    def run(setup, streams, requests):
        calls.append((streams, requests))
        return peer_tools.Done([], cpu_by_requests[requests])

    return run


def test_it_measures_a_difference_that_is_not_positive_once_more_with_more_requests():
    calls = []
    runner = _runner({8: 2.0, 104: 1.9, 200: 2.6}, calls)
    small = peer_tools.Done([], 2.0)
    large, cpu, retried = peers.cpu_difference(runner, None, 1, (8, 96), small)
    assert calls == [(1, 104), (1, 8 + peers.RETRY_FACTOR * 96)]
    assert retried and large.cpu_s == 2.6
    assert cpu == pytest.approx(0.6 / (192 * peers.TOKENS / 1000))


def test_it_keeps_a_positive_difference_without_a_retry():
    calls = []
    runner = _runner({104: 2.5}, calls)
    _, cpu, retried = peers.cpu_difference(runner, None, 1, (8, 96), peer_tools.Done([], 2.0))
    assert calls == [(1, 104)] and not retried
    assert cpu == pytest.approx(0.5 / (96 * peers.TOKENS / 1000))


def test_it_gives_no_figure_when_the_retry_is_not_positive_either():
    runner = _runner({104: 1.9, 200: 1.95}, [])
    assert peers.cpu_difference(runner, None, 1, (8, 96), peer_tools.Done([], 2.0))[1:] == (None, True)


@pytest.mark.parametrize(("streams", "requests"), [(4, 6), (1, 21 * 17)])
def test_it_refuses_a_worker_run_it_cannot_send(streams, requests):
    with pytest.raises(ValueError):
        peer_worker.rounds(streams, requests)


def test_it_leaves_a_tools_warm_ups_out_of_the_engines_figures(tmp_path):
    log = tmp_path / "engine.log"
    line = "slot print_timing: id 0 | task 1 | {} time = {} ms / {} tokens\n"
    text = [line.format("prompt eval", 500, 20), line.format("       eval", 1000, 32)]
    text += [line.format("prompt eval", 10, 20), line.format("       eval", 310, 32)] * 3
    log.write_text("".join(text))
    assert peers._engine_figures(log, 0, skip=1) == {"prompt_ms": 10.0, "decode": 100.0}
    assert peers._engine_figures(log, 0)["prompt_ms"] == 10.0


def _cpu_entry(tool, repeat, cpu, runs):
    return peers.Entry(tool, 1, 100, 100, 55, 50, cpu, repeat=repeat, cpu_s=runs)


def test_it_leaves_noise_sized_cpu_figures_out_of_the_race(capsys):
    # vllm bench: N runs 12.0 and 13.0 s (noise 1.0), its extra requests 0.1 s: 0.01 is noise.
    entries = [
        _cpu_entry(peer_race.WORKER, 1, 0.35, (2.0, 3.0)),
        _cpu_entry(peer_race.WORKER, 2, 0.33, (2.1, 3.1)),
        _cpu_entry("llama-benchy", 1, 0.30, (1.5, 2.5)),
        _cpu_entry("llama-benchy", 2, 0.30, (1.6, 2.6)),
        _cpu_entry("vllm-bench", 1, 0.01, (12.0, 12.1)),
        _cpu_entry("vllm-bench", 2, 0.01, (13.0, 13.1)),
    ]
    noise = peers.start_up_noise(entries)
    assert noise[("vllm-bench", 1)].noise_sized
    assert not noise[("llama-benchy", 1)].noise_sized and not noise[(peer_race.WORKER, 1)].noise_sized
    lines = peers._print_table(entries)
    assert lines[1].startswith("1 stream(s), CPU per 1k tokens: SparkDash 0.340, best peer 0.300")
    assert "vllm-bench           1  noise   1.00 s  extra   0.10 s  (noise-sized" in capsys.readouterr().out


def test_it_leaves_sparkdashs_own_noise_sized_figures_out_as_well():
    entries = [
        _cpu_entry(peer_race.WORKER, 1, 0.05, (2.0, 2.1)),
        _cpu_entry(peer_race.WORKER, 2, 0.05, (3.0, 3.1)),
        _cpu_entry("llama-benchy", 1, 0.30, (1.5, 2.5)),
        _cpu_entry("llama-benchy", 2, 0.30, (1.6, 2.6)),
    ]
    assert peers._print_table(entries)[1] == "1 stream(s), CPU per 1k tokens: not measured"


def test_it_judges_no_noise_from_a_single_repeat():
    assert peers.start_up_noise([_cpu_entry("vllm-bench", 1, 0.01, (12.0, 12.1))]) == {}
