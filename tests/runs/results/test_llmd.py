"""The llm-d Benchmark Report export: every report validates against the vendored v0.2.1 schema."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from runs.actions.imports import import_file
from runs.models import Run
from runs.results.llmd import report
from tests.factories import RunFactory, SampleFactory
from tests.runs.actions.test_imports import encoded, vllm_result

pytestmark = pytest.mark.django_db

SCHEMA = json.loads((Path(__file__).parents[3] / "runs/results/schemas/llmd_benchmark_report_v0_2_1.json")
                    .read_text(encoding="utf-8"))


def validate(document: dict) -> None:
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())


def speed_run(ttfts=(0.2, 0.3, 0.4)) -> Run:
    now = timezone.now()
    run = RunFactory(status=Run.Status.SUCCEEDED, started=now, finished=now,
                     summary={"ttft_s": {"median": 0.3, "min": 0.2, "max": 0.4, "n": 3}})
    for ttft in ttfts:
        values = {"ttft_s": ttft, "decode_tps_client": 40.0, "e2e_s": 6.4, "output_tokens": 256}
        SampleFactory(run=run, values=values)
    return run


def test_it_exports_a_sparkdash_run_that_validates_with_means_from_its_requests():
    document = report(speed_run())
    validate(document)
    latency = document["results"]["request_performance"]["aggregate"]["latency"]
    assert latency["time_to_first_token"] == {
        "units": "s", "mean": pytest.approx(0.3), "min": 0.2, "max": 0.4, "p50": 0.3}
    assert latency["time_per_output_token"]["mean"] == pytest.approx(1 / 40)
    assert document["results"]["request_performance"]["aggregate"]["requests"]["total"] == 3
    assert document["scenario"]["load"]["standardized"]["concurrency"] == 1


def test_it_exports_an_imported_run_with_the_tools_name_and_its_failures():
    data = encoded(vllm_result(concurrency=4, failed=2))
    (run,) = import_file("vllm.json", data, RunFactory().config).added
    document = report(run)
    validate(document)
    load = document["scenario"]["load"]["standardized"]
    assert (load["tool"], load["concurrency"]) == ("vllm-bench", 4)
    requests = document["results"]["request_performance"]["aggregate"]["requests"]
    assert (requests["total"], requests["failures"]) == (5, 2)
    aggregate = document["results"]["request_performance"]["aggregate"]
    assert aggregate["throughput"]["output_token_rate"]["mean"] == 95.5


def test_it_fails_validation_when_a_required_field_is_missing():
    document = report(speed_run())
    del document["run"]["uid"]
    with pytest.raises(jsonschema.ValidationError, match="'uid' is a required property"):
        validate(document)


def test_it_prints_reports_from_the_command_and_refuses_an_unfinished_run(capsys):
    run = speed_run()
    call_command("exportruns", str(run.pk), "--format", "llm-d")
    validate(json.loads(capsys.readouterr().out))
    queued = RunFactory()
    with pytest.raises(CommandError, match=f"run {queued.pk} has not succeeded"):
        call_command("exportruns", str(queued.pk))
