"""A job kind added by registry.register and a metric added by catalog.declare, named nowhere else:
the worker runs the job, and the metric shows in the results table, its CSV and compare without
another change."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from typing import Any

import pytest
from django.urls import reverse

from engines.clients import GenerationRequest
from engines.simulator import SimProfile, serve_in_thread
from measure import catalog
from measure.stats import summarize
from runs.core import registry
from runs.core.jobs.summary import SCHEMA_VERSION, RunSummary, Spread
from runs.core.readings import Benchmark, Metric, median_of
from runs.core.request_figures import request_metrics, send
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory
from tests.runs.worker.test_execution import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)

ECHO_TPS = catalog.MetricDef("echo_tps", "echo decode", "tok/s", "a test's own figure: two short answers' "
                             "decode (client)", column=True)


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


def echo_job_kind() -> registry.JobSpec:
    """The test's job kind; its metric must be declared first (a Metric of an undeclared key is refused)."""
    echo = Metric("Echo", "echo_tps", median_of("echo_tps"))
    return registry.JobSpec(name="echo-test", label="Echo (test)", order=999, params={}, run=run_echo,
                            headline=echo, benchmarks=(Benchmark("Echo", "echo-test"),), metrics=(echo,))


@pytest.fixture
def echo_job():
    catalog.declare(ECHO_TPS)
    job = echo_job_kind()
    registry.register(job)
    yield job
    registry.unregister(job.name)
    catalog.forget(ECHO_TPS.key)


def test_it_refuses_a_metric_nobody_declared():
    with pytest.raises(KeyError, match="echo_tps"):
        Metric("Echo", "echo_tps", median_of("echo_tps"))


def test_it_runs_a_registered_job_kind_and_shows_its_metric_in_the_table_and_compare(echo_job, alice_client):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=0)) as sim:
        engine = {"engine__base_url": sim.url, "engine__kind": "llama-server", "engine__simulator": True}
        configs = [EngineConfigFactory(name=name, max_tokens=8, **engine) for name in ("a", "b")]
        runs = [run_to_end(RunFactory(config=config, job="echo-test", params={})) for config in configs]
    assert [run.status for run in runs] == [Run.Status.SUCCEEDED] * 2, runs[0].error
    assert runs[0].summary["echo_tps"]["n"] == 2
    assert runs[0].summary["schema_version"] == SCHEMA_VERSION  # checked against its type, and stamped
    table = alice_client.get(reverse("runs:results"), {"format": "csv", "job": "echo-test"}).content.decode()
    rows = {int(r["run"]): r for r in csv.DictReader(io.StringIO(table))}
    for run in runs:
        assert rows[run.pk]["headline"] == "echo decode"
        assert float(rows[run.pk]["headline_value"]) == run.summary["echo_tps"]["median"]
        assert float(rows[run.pk]["echo_tps"]) == run.summary["echo_tps"]["median"]
    page = alice_client.get(reverse("runs:results"), {"job": "echo-test"})
    assert "echo decode, tok/s" in page.content.decode()
    listed = alice_client.get(reverse("runs:list"), {"job": "echo-test"}).content.decode()
    assert listed.count("echo decode <span>") == 2  # each run's headline in the runs list
    picked = {"runs": f"{runs[0].pk},{runs[1].pk}", "format": "json"}
    compared = alice_client.get(reverse("runs:compare"), picked)
    echo = [r for r in json.loads(compared.content)["rows"] if r["metric"] == "echo_tps"]
    assert [r["median"] for r in echo] == [run.summary["echo_tps"]["median"] for run in runs]


def test_it_forgets_an_unregistered_job_kind(echo_job):
    registry.unregister(echo_job.name)
    assert "echo-test" not in registry.JOBS and echo_job.headline not in registry.METRICS
    assert "echo-test" not in registry.SCORED_JOBS


class EchoSummary(RunSummary):
    echo_tps: Spread | None = None


async def run_misshapen(ctx: registry.JobContext) -> dict[str, Any]:
    await ctx.progress.on_start(0)
    return {"echo_tps": {"median": "fast"}, "note": "kept"}


def test_it_fails_a_run_whose_summary_is_not_what_its_job_declares_and_keeps_the_summary(echo_job):
    misshapen = replace(echo_job, name="misshapen-test", run=run_misshapen, summary_type=EchoSummary)
    registry.register(misshapen)
    try:
        with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=0)) as sim:
            config = EngineConfigFactory(engine__base_url=sim.url, engine__kind="llama-server",
                                         engine__simulator=True)
            run = run_to_end(RunFactory(config=config, job="misshapen-test", params={}))
    finally:
        registry.unregister(misshapen.name)
    assert run.status == Run.Status.FAILED
    assert run.error.startswith("summary does not hold what its job declares (echo_tps.median:")
    assert run.summary["note"] == "kept" and "schema_version" not in run.summary

