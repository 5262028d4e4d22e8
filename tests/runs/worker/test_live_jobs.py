import json

import pytest
from channels.db import database_sync_to_async

from engines.models import Engine
from engines.simulator import SimProfile
from runs.actions.runs import start_run
from runs.models import Run
from tests.factories import EngineConfigFactory, UserFactory
from tests.real_engine import free_port
from tests.runs.celery_helpers import open_run_socket, receive_until_finished, session_cookie, stored_run

pytestmark = pytest.mark.django_db(transaction=True)

RECORDED = "\n".join(
    json.dumps({"messages": [{"role": "user", "content": f"step {i}"}], "max_tokens": 16}) for i in range(4)
)
JOBS = {
    "replay": (SimProfile(decode_tps=60, ttft_ms=50), {"requests": RECORDED, "reps": 2, "warmup": 0}),
    "concurrency": (SimProfile(decode_tps=60, ttft_ms=50), {"levels": [1, 2, 4], "answer_tokens": 24}),
    "prefix-cache": (
        SimProfile(decode_tps=60, ttft_ms=50, prefill_tps=5000, cache_tokens=1000),
        {"steps": 5, "bytes_per_step": 1200, "answer_tokens": 8},
    ),
}


def assert_live(received, run, seqs):
    """Samples reached the socket while the run ran, each stored sample exactly once."""
    batches = [(t, m) for t, m in received if m["type"] == "samples"]
    assert len(batches) >= 2, f"expected several live batches, got {len(batches)}"
    assert batches[0][0] < run.finished.timestamp()
    seen = [s["seq"] for _, m in batches for s in m["samples"]]
    assert seen == seqs


async def watch(config, job, params):
    cookie = await database_sync_to_async(lambda: session_cookie(UserFactory()))()
    run = await database_sync_to_async(start_run)(config, job, params)
    socket = await open_run_socket(run.pk, cookie)
    received = await receive_until_finished(socket)
    await socket.disconnect()
    run, seqs = await database_sync_to_async(stored_run)(run.pk)
    assert run.status == Run.Status.SUCCEEDED, run.error
    return received, run, seqs


@pytest.mark.parametrize("job", sorted(JOBS))
async def test_it_streams_each_workload_job_live(sim_config, settings, job):
    settings.SPARKDASH_WORKER = "inprocess"
    profile, params = JOBS[job]
    config = await database_sync_to_async(sim_config)(profile, prefix=f"live-{job}")
    received, run, seqs = await watch(config, job, params)
    assert_live(received, run, seqs)
    assert seqs


async def test_it_streams_a_lookahead_sweep_live(settings):
    settings.SPARKDASH_WORKER = "inprocess"
    config = await database_sync_to_async(EngineConfigFactory)(
        model="demo",
        max_tokens=16,
        extra_flags="--decode-tps 60 --ttft-ms 50 --acceptance 0.9",
        engine__simulator=True,
        engine__launch=Engine.Launch.MANAGED,
        engine__base_url=f"http://127.0.0.1:{free_port()}",
    )
    received, run, seqs = await watch(config, "lookahead", {"lengths": [0, 4], "reps": 1, "warmup": 0})
    assert_live(received, run, seqs)
    lengths = {
        s["values"].get("lookahead") for _, m in received if m["type"] == "samples" for s in m["samples"]
    }
    assert {0, 4} <= lengths
