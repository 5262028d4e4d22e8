"""A job kind added by registry.register, named nowhere else: the worker runs it, and its metric
shows in the results table, its CSV and compare without another change."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.urls import reverse

from engines.clients import GenerationRequest
from engines.simulator import SimProfile, serve_in_thread
from measure.stats import summarize
from runs.core import registry
from runs.core.metrics import request_metrics, send
from runs.core.readings import Benchmark, Metric, median_of
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory
from tests.runs.worker.test_execution import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = Metric("Echo", "echo_tps", "echo decode", "tok/s", True, median_of("echo_tps"))


async def run_echo(ctx: registry.JobContext) -> dict[str, Any]:
    """Two short requests; their client decode speed as the job's one figure."""
    await ctx.progress.on_start(2)
    rows = []
    for i in range(2):
        hello = [{"role": "user", "content": "Hi"}]
        ask = GenerationRequest(model=ctx.config.model, messages=hello, max_tokens=8)
        rows.append(request_metrics(await send(ctx.client, ask, f"echo {i + 1}")))
        await ctx.progress.on_sample("request", rows[-1])
    return {"echo_tps": summarize(r["decode_tps_client"] for r in rows)}


ECHO_JOB = registry.JobSpec(name="echo-test", label="Echo (test)", order=999, params={}, run=run_echo,
                            headline=ECHO, benchmarks=(Benchmark("Echo", "echo-test"),), metrics=(ECHO,))


@pytest.fixture
def echo_job():
    registry.register(ECHO_JOB)
    yield ECHO_JOB
    registry.unregister(ECHO_JOB.name)


def test_it_runs_a_registered_job_kind_and_shows_its_metric_in_the_table_and_compare(echo_job, alice_client):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=0)) as sim:
        engine = {"engine__base_url": sim.url, "engine__kind": "llama-server", "engine__simulator": True}
        configs = [EngineConfigFactory(name=name, max_tokens=8, **engine) for name in ("a", "b")]
        runs = [run_to_end(RunFactory(config=config, job="echo-test", params={})) for config in configs]
    assert [run.status for run in runs] == [Run.Status.SUCCEEDED] * 2, runs[0].error
    assert runs[0].summary["echo_tps"]["n"] == 2
    table = alice_client.get(reverse("runs:results"), {"format": "csv", "job": "echo-test"}).content.decode()
    rows = {int(r["run"]): r for r in csv.DictReader(io.StringIO(table))}
    for run in runs:
        assert rows[run.pk]["headline"] == "echo decode"
        assert float(rows[run.pk]["headline_value"]) == run.summary["echo_tps"]["median"]
    picked = {"runs": f"{runs[0].pk},{runs[1].pk}", "format": "json"}
    compared = alice_client.get(reverse("runs:compare"), picked)
    echo = [r for r in json.loads(compared.content)["rows"] if r["metric"] == "echo_tps"]
    assert [r["median"] for r in echo] == [run.summary["echo_tps"]["median"] for run in runs]


def test_it_forgets_an_unregistered_job_kind():
    registry.register(ECHO_JOB)
    registry.unregister(ECHO_JOB.name)
    assert "echo-test" not in registry.JOBS and ECHO not in registry.METRICS
    assert "echo-test" not in registry.SCORED_JOBS
