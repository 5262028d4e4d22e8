import asyncio
import time

from measure.client_health import MIN_CPU_WALL_S, MIN_LATE_PROBES, THRESHOLDS, ClientHealth, verdict


def watched(body, interval_s=0.01):
    async def main():
        async with ClientHealth(interval_s) as health:
            await body()
        return health.figures()

    return asyncio.run(main())


def test_it_reports_low_lag_for_an_idle_loop():
    async def idle():
        await asyncio.sleep(0.5)

    health = watched(idle)
    assert health["probes"] > 10
    assert health["loop_lag_ms"]["p99"] < THRESHOLDS.loop_lag_p99_ms
    assert not health["client_bound"] and health["reasons"] == []


def test_it_reports_high_lag_for_a_loop_blocked_by_a_callback():
    async def blocked():
        loop = asyncio.get_running_loop()

        def block():
            time.sleep(0.2)
            loop.call_later(0.05, block)

        loop.call_later(0.05, block)
        await asyncio.sleep(1.0)

    health = watched(blocked)
    assert health["loop_lag_ms"]["p99"] > 150 and health["loop_lag_ms"]["max"] > 150
    assert health["client_bound"] and health["reasons"] == ["loop_lag"]


def test_it_reports_a_busy_loops_cpu_as_high():
    async def busy():
        end = time.perf_counter() + 0.5
        for _ in range(10**8):
            if time.perf_counter() > end:
                break
            await asyncio.sleep(0)

    health = watched(busy)
    # A whole core when it has one; a share of it on a crowded machine, never an idle loop's few %.
    assert health["loop_cpu_pct_of_core"] > 30
    assert health["cpu_pct_of_core"] >= health["loop_cpu_pct_of_core"] - 1  # the process holds the loop


def test_it_counts_thinned_updates_and_schedule_delays():
    health = ClientHealth()
    health.thinned(3)
    for delay_s in (0.001, 0.002, 0.2):
        health.scheduled(delay_s)
    figures = health.figures()
    assert figures["live_updates_thinned"] == 3
    assert figures["schedule_delay_ms"] == {"p50": 2.0, "p99": 200.0}
    assert figures["reasons"] == ["thinned", "schedule_delay"]


def test_it_judges_the_loops_cpu_only_over_a_long_enough_run():
    busy = {"loop_cpu_pct_of_core": 95.0, "wall_s": MIN_CPU_WALL_S}
    assert verdict(busy) == ["cpu"]
    assert verdict(busy | {"wall_s": MIN_CPU_WALL_S / 2}) == []
    assert verdict(busy | {"loop_cpu_pct_of_core": THRESHOLDS.loop_cpu_pct_of_core}) == []


def test_it_finds_nothing_wrong_with_a_run_without_figures():
    assert verdict({}) == []


def test_it_takes_more_than_one_late_wake_up_to_call_the_loop_lagging():
    lagging = {"loop_lag_ms": {"p50": 1.0, "p99": 80.0, "max": 80.0}, "late_probes": MIN_LATE_PROBES}
    assert verdict(lagging) == ["loop_lag"]
    assert verdict(lagging | {"late_probes": MIN_LATE_PROBES - 1}) == []  # one hiccup of the OS's


def test_it_keeps_each_levels_achieved_concurrency_and_calls_a_short_level_client_bound():
    health = ClientHealth()
    health.achieved(4, 3.9)
    health.achieved(16, 11.0)
    figures = health.figures()
    assert figures["achieved_concurrency"] == [{"requested": 4, "achieved": 3.9},
                                               {"requested": 16, "achieved": 11.0}]
    assert figures["reasons"] == ["achieved_concurrency"]


def test_it_lets_a_level_keep_three_quarters_of_its_concurrency():
    share = THRESHOLDS.achieved_concurrency_share
    kept = {"achieved_concurrency": [{"requested": 100, "achieved": 100 * share}]}
    assert verdict(kept) == []
    assert ClientHealth().figures()["achieved_concurrency"] is None


def test_it_judges_split_levels_by_their_worst_measuring_process():
    health = ClientHealth()
    health._end = (MIN_CPU_WALL_S + 1, 0.1, 0.1)  # the job's own loop: watched long enough, idle
    lagging = {"loop_lag_ms": {"p50": 5.0, "p99": 80.0, "max": 90.0}, "probes": 200, "late_probes": 6,
               "wall_s": MIN_CPU_WALL_S + 1, "cpu_pct_of_core": 40.0, "loop_cpu_pct_of_core": 39.0, "pid": 2}
    busy = {"loop_lag_ms": {"p50": 1.0, "p99": 2.0, "max": 3.0}, "probes": 200, "late_probes": 0,
            "wall_s": MIN_CPU_WALL_S + 1, "cpu_pct_of_core": 97.0, "loop_cpu_pct_of_core": 96.0, "pid": 3}
    short = busy | {"wall_s": MIN_CPU_WALL_S / 2, "loop_cpu_pct_of_core": 100.0, "pid": 4}
    for figures in (lagging, busy, short):
        health.process(figures)
    figures = health.figures()
    assert [p["pid"] for p in figures["processes"][1:]] == [2, 3, 4]
    assert figures["loop_lag_ms"] == lagging["loop_lag_ms"] and figures["late_probes"] == 6
    assert figures["loop_cpu_pct_of_core"] == 96.0  # the short-lived process's 100 % is not judged
    assert figures["reasons"] == ["loop_lag", "cpu"]


def test_it_lists_no_processes_for_a_job_on_its_own_loop():
    assert ClientHealth().figures()["processes"] is None
