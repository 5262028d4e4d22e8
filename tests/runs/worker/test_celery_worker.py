from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from engines.simulator import SimProfile
from runs.actions.runs import start_run
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.models import Run
from tests.factories import UserFactory
from tests.runs.celery_helpers import (
    assert_streamed_live,
    celery_worker,
    open_run_socket,
    receive_until_finished,
    requires_celery,
    session_cookie,
    stored_run,
    wait_until_finished,
)

pytestmark = [requires_celery, pytest.mark.django_db(transaction=True)]

PARAMS = {"reps": 2, "warmup": 0, "max_tokens": 32}
PROFILE = SimProfile(decode_tps=40, ttft_ms=100, lookahead=4, acceptance=0.8)


async def test_it_runs_a_speed_run_on_a_real_worker_and_streams_samples_live(sim_config):
    # database_sync_to_async, not the async ORM: it closes the connection it used afterwards.
    config = await database_sync_to_async(sim_config)(PROFILE, prefix="celery-speed")
    cookie = await database_sync_to_async(lambda: session_cookie(UserFactory()))()
    requests = PARAMS["reps"] * len(SPEED_PROMPTS)

    with celery_worker(config.engine.machine.queue_name, name="speed") as worker:
        run = await database_sync_to_async(start_run)(config, "speed", PARAMS)
        socket = await open_run_socket(run.pk, cookie)
        received = await receive_until_finished(socket)
        await socket.disconnect()
    run, seqs = await database_sync_to_async(stored_run)(run.pk)

    final = received[-1][1]["run"]
    assert final["status"] == Run.Status.SUCCEEDED, f"{final['error']}\n{worker.log()}"
    assert_streamed_live(received, run, requests)
    for metric in ("decode_tps_client", "ttft_s", "acceptance_rate_per_request"):
        assert run.summary[metric]["n"] == requests, metric
    # Pooled over the run by the simulator's own counters (docs/metrics.md, Acceptance).
    counted = run.summary["spec_decode_metrics"]
    assert run.summary["acceptance_rate"]["source"] == "engine"
    assert run.summary["acceptance_rate"]["pooled"] == counted["accepted"] / counted["draft_tokens"]
    assert seqs == list(range(len(seqs)))  # requests and telemetry readings, each once


def test_it_keeps_running_jobs_after_the_database_drops_the_workers_connections(sim_config):
    config = sim_config(SimProfile(decode_tps=400, ttft_ms=5), prefix="celery-reconnect")
    params = {"reps": 1, "warmup": 0, "max_tokens": 4}
    with celery_worker(config.engine.machine.queue_name, name="reconnect") as worker:
        first = wait_until_finished([start_run(config, "speed", params).pk])
        drop_connections_of(worker.name)
        second = wait_until_finished([start_run(config, "speed", params).pk])

    runs = first + second
    assert [run.status for run in runs] == [Run.Status.SUCCEEDED] * 2, [run.error for run in runs]


def drop_connections_of(application_name: str) -> None:
    """What a Postgres restart or an idle-session timeout does to a worker's connections."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            [application_name],
        )
