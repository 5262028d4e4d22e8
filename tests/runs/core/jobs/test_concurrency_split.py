"""Split load levels (runs.core.jobs.concurrency.split, pool, child): real measuring processes
against a simulator served over TCP, so each test takes a second or two."""
import asyncio
import multiprocessing
import os
import signal

import httpx
import pytest

from engines.clients import client_for
from engines.errors import EngineHTTPError
from engines.simulator import SimProfile, serve_in_thread
from measure.client_health import ClientHealth
from runs.core.jobs.concurrency.kind import JOB
from runs.core.jobs.concurrency.loop import ConcurrencyJob, run_concurrency
from runs.core.jobs.concurrency.pool import MeasuringProcessLost, engine_error, shares
from runs.core.jobs.concurrency.split import MAX_PER_PROCESS, SplitPlan, default_processes
from runs.core.jobs.params import ParamError
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free


async def sweep(url, job):
    progress, health = CollectingProgress(), ClientHealth()
    async with health, client_for("llama-server", url) as client:
        summary = await run_concurrency(client, job, progress, health)
    return summary, progress, health.figures()


def shape(value):
    """A value's form: its keys, nested, and the type of each leaf."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


async def test_it_splits_a_level_across_two_processes_with_the_single_process_form():
    job = ConcurrencyJob("demo", levels=(4,), answer_tokens=8, reps=2, warmup=0, split_from=4, processes=2)
    alone = ConcurrencyJob("demo", levels=(4,), answer_tokens=8, reps=2, warmup=0, split_from=5)
    with serve_in_thread(SimProfile(decode_tps=200, ttft_ms=20, batch_cost=0)) as sim:
        split, split_progress, split_health = await sweep(sim.url, job)
        single, single_progress, single_health = await sweep(sim.url, alone)
    forms = [[(kind, shape(v)) for kind, v in p.samples] for p in (split_progress, single_progress)]
    assert forms[0] == forms[1]
    assert shape(split) == shape(single)
    requests = [v for kind, v in split_progress.samples if kind == "request"]
    assert [(r["rep"], r["index"]) for r in requests] == [(rep, i) for rep in range(2) for i in range(4)]
    assert all(r["output_tokens"] == 8 and 0 < r["ttft_s"] < r["e2e_s"] for r in requests)
    assert all(r["decode_tps_client"] > 0 for r in requests)  # how close: make bench's fidelity
    level = split["levels"]["4"]
    assert level["requests"] == 8 and level["total_tps"]["n"] == 2 and 0 < level["achieved_concurrency"] <= 4
    assert len(split_health["processes"]) == 3 and single_health["processes"] is None
    assert len(split_health["processes"][0]) == len(split_health["processes"][1])  # own loop, then each
    assert split_health["achieved_concurrency"][0]["requested"] == 4
    assert multiprocessing.active_children() == []  # every measuring process stopped


async def test_it_fails_the_run_clearly_when_a_measuring_process_is_killed():
    job = ConcurrencyJob("demo", levels=(4,), answer_tokens=60, warmup=0, split_from=2, processes=2)
    progress = CollectingProgress()

    async def kill_one_mid_burst(url):
        async with httpx.AsyncClient() as http:  # until all 4 are streaming (60 tokens take 2 s)
            for _ in range(400):
                if len((await http.get(f"{url}/sim/sends")).json()["replies"]) == 4:
                    break
                await asyncio.sleep(0.05)
        os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)

    with serve_in_thread(SimProfile(decode_tps=30, ttft_ms=10, batch_cost=0)) as sim:
        async with client_for("llama-server", sim.url) as client:
            killer = asyncio.ensure_future(kill_one_mid_burst(sim.url))
            lost = (r"measuring process \d of 2 \(pid \d+\) was killed by SIGKILL during level 4, "
                    r"repetition 1: 2 of its 2 requests were lost")
            with pytest.raises(MeasuringProcessLost, match=lost):
                await run_concurrency(client, job, progress)
            await killer
    kept = [v for kind, v in progress.samples if kind == "request"]
    assert len(kept) <= 2 and all(r["output_tokens"] == 60 for r in kept)
    assert multiprocessing.active_children() == []


def test_it_rebuilds_an_engine_error_a_measuring_process_sent():
    exc = engine_error("EngineHTTPError", "level 4, repetition 1, request 2 of 4: HTTP 500", {"status": 500})
    assert isinstance(exc, EngineHTTPError) and exc.status == 500 and str(exc).endswith("HTTP 500")
    assert type(engine_error("SomethingElse", "x", {})).__name__ == "EngineError"


def test_it_splits_from_the_threshold_and_past_one_connection_pool():
    plan = SplitPlan(split_from=32, processes=2)
    assert [plan.processes_for(c) for c in (1, 31, 32, 100, 256)] == [0, 0, 2, 2, 3]
    assert SplitPlan(split_from=256).processes_for(101) == max(default_processes(), 2)
    assert SplitPlan(split_from=1, processes=8).processes_for(3) == 3
    assert [len(part) for part in shares(256, 3)] == [86, 85, 85]
    assert MAX_PER_PROCESS > 256 / 3
    with pytest.raises(ValueError, match="processes 0 to 64"):
        ConcurrencyJob("demo", levels=(4,), processes=65)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("split_from", 0, "split_from must be between 1 and 256, not 0"),
    ("split_from", "x", "split_from must be a whole number"),
    ("processes", 65, "processes must be between 0 and 64, not 65"),
    ("processes", -1, "processes must be between 0 and 64, not -1"),
    ("levels", "1,257", "levels item must be between 1 and 256, not 257"),
])
def test_it_refuses_a_split_setting_out_of_range(name, value, message):
    with pytest.raises(ParamError, match=message):
        JOB.params[name].clean(name, value)


def test_it_defaults_to_splitting_from_32_on_one_process_per_core_beyond_the_first():
    assert JOB.params["split_from"].clean("split_from", None) == 32
    assert JOB.params["processes"].clean("processes", None) == 0
    assert default_processes() == max(1, os.cpu_count() - 1)
