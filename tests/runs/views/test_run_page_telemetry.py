"""The run page's hardware telemetry part (templates/runs/_telemetry.html) for every job kind."""
from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core import registry
from runs.models import Run
from tests.factories import RunFactory, telemetry_summary

pytestmark = pytest.mark.django_db


def _page(client, run: Run) -> str:
    response = client.get(reverse("runs:detail", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("job", [name for name, _ in registry.startable_choices()])
def test_it_includes_the_telemetry_chart_and_script_for_every_job(alice_client, job):
    page = _page(alice_client, RunFactory(job=job, status=Run.Status.SUCCEEDED))
    assert 'id="telemetry-chart"' in page and 'id="telemetry-summary"' in page
    assert "js/telemetry.js" in page
    assert page.index("js/telemetry.js") < page.index("js/run_detail.js")
    assert "none: the run ended without a telemetry summary" in page


def test_it_shows_no_telemetry_for_an_imported_run_whose_tool_measured_it(alice_client):
    run = RunFactory(job="imported", status=Run.Status.SUCCEEDED, params={"tool": "guidellm"})
    page = _page(alice_client, run)
    assert 'id="telemetry-chart"' not in page and 'id="telemetry-summary"' not in page
    assert 'id="imported-figures"' in page


def test_it_says_plainly_there_is_no_gpu_telemetry(alice_client):
    run = RunFactory(status=Run.Status.SUCCEEDED, summary={"telemetry": telemetry_summary(gpu=False)})
    page = _page(alice_client, run)
    assert "<strong data-telemetry-note>no GPU telemetry on this machine</strong>" in page
    assert "host at 10 Hz, 312 readings" in page
    assert "no power reading on this machine" in page
    assert "not throttled (60.0 s job)" in page
    assert "CPU load during the job" in page and "GPU power during the job" not in page


def test_it_shows_energy_throttle_and_the_throttled_warning(alice_client):
    message = "throttled for 12.3 s of the 60.0 s job: thermal 12.3 s"
    warning = {"kind": "throttled", "message": message, "throttled_s": 12.3}
    run = RunFactory(
        status=Run.Status.SUCCEEDED, summary={"telemetry": telemetry_summary(gpu=True, throttled_s=12.3)},
        warnings=[warning],
    )
    page = _page(alice_client, run)
    assert 'data-warning="throttled"' in page and warning["message"] in page
    assert "throttled 12.3 s of 60.0 s: thermal 12.3 s" in page
    assert "1.20 J per output token, 60.00 J per request (100 tokens, 2 requests)" in page
    assert "… output type tool-call" in page and "… concurrency 4" in page
    assert "GPU power during the job" in page and "70.0 [60.0\u201380.0] W (n=100)" in page
    assert "no GPU telemetry on this machine" not in page
