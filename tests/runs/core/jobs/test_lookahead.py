from contextlib import asynccontextmanager

import pytest

from engines.clients import client_for
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.lookahead.loop import LookaheadJob, run_lookahead
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.core.jobs.speed.loop import SpeedJob
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free


def simulator_at_lookahead(started):
    @asynccontextmanager
    async def at(length):
        # A fresh simulator per length, as a relaunched engine would be.
        with serve_in_thread(SimProfile(decode_tps=300, ttft_ms=5, lookahead=length, acceptance=0.9)) as sim:
            started.append(length)
            async with client_for("llama-server", sim.url) as client:
                yield client, "demo"

    return at


async def test_it_measures_each_length_on_a_relaunched_engine():
    started, progress = [], CollectingProgress()
    speed = SpeedJob("ignored", reps=1, warmup=0, sampling={"max_tokens": 24}, prompts=SPEED_PROMPTS[:2])
    summary = await run_lookahead(simulator_at_lookahead(started), LookaheadJob(speed, (0, 4)), progress)
    assert started == [0, 4]
    assert progress.total == 4 and len(progress.samples) == 4
    assert [v["lookahead"] for _, v in progress.samples] == [0, 0, 4, 4]
    lengths = summary["lengths"]
    assert lengths["0"]["all"]["acceptance_rate"] is None
    assert lengths["4"]["all"]["acceptance_rate"]["pooled"] > 0.5
    assert lengths["4"]["all"]["tokens_per_verification"]["pooled"] > 2
    assert set(lengths["4"]) == {"all", "tool-call"}
    assert summary["best_lookahead"] == 4


async def test_it_reports_the_summary_so_far_per_length_as_the_sweep_goes():
    progress = CollectingProgress()
    speed = SpeedJob("ignored", reps=1, warmup=0, sampling={"max_tokens": 24}, prompts=SPEED_PROMPTS[:2])
    summary = await run_lookahead(simulator_at_lookahead([]), LookaheadJob(speed, (0, 4)), progress)
    so_far = progress.summaries_so_far
    assert [s["requests"] for s in so_far] == [1, 2, 3, 4]
    assert so_far[1]["lengths"]["4"]["all"]["decode_tps_client"] is None  # not measured yet
    last = so_far[-1]["lengths"]["4"]["all"]["decode_tps_client"]
    assert last["median"] == summary["lengths"]["4"]["all"]["decode_tps_client"]["median"]
    assert "median_ci" not in last and "median_ci" in summary["lengths"]["4"]["all"]["decode_tps_client"]
