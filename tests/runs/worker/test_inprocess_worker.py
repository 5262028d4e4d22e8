from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.db import database_sync_to_async

from engines.simulator import SimProfile
from runs.actions.runs import start_run
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.models import Run
from runs.worker import dispatch, execution
from tests.factories import RunFactory, UserFactory
from tests.runs.celery_helpers import (
    assert_streamed_live,
    open_run_socket,
    overlaps,
    receive_until_finished,
    session_cookie,
    stored_run,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Six requests of ~0.33 s each: a run lasts about 2 s.
QUEUE_PARAMS = {"reps": 1, "warmup": 0, "max_tokens": 12}
QUEUE_PROFILE = SimProfile(decode_tps=40, ttft_ms=50)
SPEED_PARAMS = {"reps": 2, "warmup": 0, "max_tokens": 32}
SPEED_PROFILE = SimProfile(decode_tps=40, ttft_ms=100, lookahead=4, acceptance=0.8)


def test_it_never_overlaps_two_runs_on_one_machine_but_runs_two_machines_at_once(sim_config):
    a, b = sim_config(QUEUE_PROFILE, prefix="box-a"), sim_config(QUEUE_PROFILE, prefix="box-b")
    runs = [RunFactory(config=config, params=QUEUE_PARAMS) for config in (a, a, b, b)]
    a1, a2, b1, b2 = runs
    # A stray thread (as if in another process) takes A's second run: only the claim keeps it waiting.
    with ThreadPoolExecutor(1, thread_name_prefix="stray") as stray:
        futures = [dispatch.submit_in_process(run.machine_id, run.pk) for run in (a1, b1, b2)]
        futures.append(stray.submit(dispatch.process_in_process, a2.pk))
        outcomes = [f.result(timeout=30) for f in futures]

    assert outcomes == [execution.CLAIMED] * 4
    for run in runs:
        run.refresh_from_db()
    assert [run.status for run in runs] == [Run.Status.SUCCEEDED] * 4, [run.error for run in runs]
    assert not overlaps(a1, a2), (a1.started, a1.finished, a2.started, a2.finished)
    assert not overlaps(b1, b2), (b1.started, b1.finished, b2.started, b2.finished)
    assert any(overlaps(x, y) for x in (a1, a2) for y in (b1, b2))


async def test_it_streams_a_speed_run_live_from_the_in_process_worker(sim_config, settings):
    settings.SPARKDASH_WORKER = "inprocess"
    # database_sync_to_async, not the async ORM: it closes the connection it used afterwards.
    config = await database_sync_to_async(sim_config)(SPEED_PROFILE, prefix="inprocess-speed")
    cookie = await database_sync_to_async(lambda: session_cookie(UserFactory()))()
    requests = SPEED_PARAMS["reps"] * len(SPEED_PROMPTS)

    run = await database_sync_to_async(start_run)(config, "speed", SPEED_PARAMS)
    socket = await open_run_socket(run.pk, cookie)
    received = await receive_until_finished(socket)
    await socket.disconnect()
    run, seqs = await database_sync_to_async(stored_run)(run.pk)

    assert received[-1][1]["run"]["status"] == Run.Status.SUCCEEDED, run.error
    assert_streamed_live(received, run, requests)
    assert seqs == list(range(len(seqs)))
    assert run.summary["decode_tps_client"]["n"] == requests

