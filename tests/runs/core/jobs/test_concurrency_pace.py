import pytest

from engines.clients import client_for
from engines.clients.base import EngineFigures, Generation
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.concurrency.loop import ConcurrencyJob, run_concurrency
from runs.core.jobs.concurrency.pace import achieved_concurrency, schedule_delays
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free


def gen(sent_at, finished_at):
    return Generation(sent_at=sent_at, chunks=[], finished_at=finished_at, figures=EngineFigures())


class Pace:
    """A ClientPace that keeps what it hears."""

    def __init__(self):
        self.delays = []
        self.levels = []

    def scheduled(self, delay_s):
        self.delays.append(delay_s)

    def achieved(self, requested, achieved):
        self.levels.append((requested, achieved))


def test_it_times_each_request_from_the_bursts_planned_start():
    assert schedule_delays([gen(10.0, 12.0), gen(10.25, 12.0), gen(9.99, 12.0)], 10.0) == [0.0, 0.25, 0.0]


def test_it_counts_every_request_in_flight_when_all_went_out_on_time():
    assert achieved_concurrency([gen(10.0, 12.0)] * 4, 10.0) == 4


def test_it_counts_a_late_request_for_the_part_of_the_window_it_was_in_flight():
    # One of four sent halfway to the first answer's end: 3 + 0.5 in flight on average.
    gens = [gen(10.0, 12.0), gen(10.0, 13.0), gen(10.0, 12.5), gen(11.0, 14.0)]
    assert achieved_concurrency(gens, 10.0) == pytest.approx(3.5)
    assert achieved_concurrency([], 10.0) is None


async def test_it_reports_each_requests_delay_and_each_levels_achieved_concurrency():
    # Bounds only: how late a request goes out on a busy box is the box's business.
    job = ConcurrencyJob("demo", levels=(1, 4), answer_tokens=8, reps=2, warmup=0)
    pace = Pace()
    with serve_in_thread(SimProfile(decode_tps=200, ttft_ms=20)) as sim:
        async with client_for("llama-server", sim.url) as client:
            summary = await run_concurrency(client, job, CollectingProgress(), pace)
    assert len(pace.delays) == 10 and all(d >= 0 for d in pace.delays)
    assert [c for c, _ in pace.levels] == [1, 4]
    for c, achieved in pace.levels:
        assert 0 < achieved <= c
        assert summary["levels"][str(c)]["achieved_concurrency"] == round(achieved, 3)


async def test_it_leaves_out_a_burst_with_a_failure_from_the_achieved_concurrency():
    profile = SimProfile(decode_tps=500, ttft_ms=5, fault="http-500", fault_every=4)
    pace = Pace()
    with serve_in_thread(profile) as sim:
        async with client_for("llama-server", sim.url) as client:
            job = ConcurrencyJob("demo", levels=(4,), answer_tokens=8, warmup=0)
            summary = await run_concurrency(client, job, CollectingProgress(), pace)
    assert summary["levels"]["4"]["achieved_concurrency"] is None
    assert pace.levels == [] and len(pace.delays) == 3


async def test_it_runs_without_a_pace():
    job = ConcurrencyJob("demo", levels=(2,), answer_tokens=4, warmup=0)
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5)) as sim:
        async with client_for("llama-server", sim.url) as client:
            summary = await run_concurrency(client, job, CollectingProgress())
    assert 0 < summary["levels"]["2"]["achieved_concurrency"] <= 2
