"""A job kind added as a folder of its own (written at test time beside runs/core/jobs/), with a
metric, a run page part and a script, named nowhere else: the registry finds it, the worker runs
it, its run page includes its part and loads its script, and its metric shows in the runs list,
the results table, its CSV and compare without another change."""
from __future__ import annotations

import csv
import importlib
import io
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

import runs.core.jobs
from engines.simulator import SimProfile, serve_in_thread
from measure import catalog
from runs.core import registry
from runs.core.jobs.summary import SCHEMA_VERSION, RunSummary, Spread
from runs.core.readings import ScoredMetric, median_of
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory
from tests.runs.worker.test_execution import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)

# The folder of the test's job kind, file by file, as a new kind's author would write it.
ECHO_KIND = {
    "__init__.py": '"""The echo-test job kind, for a test only."""\n',
    "kind.py": '''"""The echo-test job: two short requests; their client decode speed as its one figure."""
from __future__ import annotations

from typing import Any

from engines.clients import GenerationRequest
from measure import catalog
from measure.stats import summarize
from runs.core.jobs.spec import JobContext, JobSpec
from runs.core.readings import Benchmark, ScoredMetric, median_of
from runs.core.request_figures import request_metrics, send

catalog.declare_all(catalog.Metric("echo_tps", "echo decode", "tok/s",
                                   "a test's own figure: two short answers' decode (client)", column=True))


async def run(ctx: JobContext) -> dict[str, Any]:
    await ctx.progress.on_start(2)
    rows = []
    for i in range(2):
        hello = [{"role": "user", "content": "Hi"}]
        ask = GenerationRequest(model=ctx.config.model, messages=hello, max_tokens=8)
        rows.append(request_metrics(await send(ctx.client, ask, f"echo {i + 1}")))
        await ctx.progress.on_sample("request", rows[-1])
    return {"echo_tps": summarize(r["decode_tps_client"] for r in rows)}


JOB = JobSpec(name="echo-test", label="Echo (test)", order=999, params={}, run=run,
              benchmarks=(Benchmark("Echo", "echo-test"),),
              metrics=(ScoredMetric("Echo", "echo_tps", median_of("echo_tps")),))
''',
    "page.html": '<article id="echo-test-part"><h2>Echo answers</h2></article>\n',
    "view.js": '(function () {\n  RunCharts.register("echo-test", {});\n})();\n',
}


def _forget_echo_kind(path: str) -> None:
    runs.core.jobs.__path__.remove(path)
    for module in [name for name in sys.modules if name.startswith("runs.core.jobs.echo_test")]:
        del sys.modules[module]
    catalog.forget("echo_tps")
    registry.rescan()


@pytest.fixture
def echo_job(tmp_path: Path):
    folder = tmp_path / "echo_test"
    folder.mkdir()
    for name, text in ECHO_KIND.items():
        (folder / name).write_text(text, encoding="utf-8")
    runs.core.jobs.__path__.append(str(tmp_path))
    importlib.invalidate_caches()
    try:
        registry.rescan()
    except BaseException:
        _forget_echo_kind(str(tmp_path))
        raise
    yield registry.JOBS["echo-test"]
    _forget_echo_kind(str(tmp_path))  # other tests see only the real kinds again


def test_it_finds_a_job_kind_by_its_folder_with_its_part_and_script(echo_job):
    assert echo_job.folder.name == "echo_test" and echo_job.headline.key == "echo_tps"
    assert finders.find("js/jobs/echo-test.js") == str(echo_job.folder / "view.js")


def test_it_refuses_a_metric_nobody_declared():
    with pytest.raises(KeyError, match="echo_tps"):
        ScoredMetric("Echo", "echo_tps", median_of("echo_tps"))


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
    shown = alice_client.get(runs[0].get_absolute_url()).content.decode()
    assert '<article id="echo-test-part">' in shown and "/static/js/jobs/echo-test.js" in shown
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

