"""A run through the worker against an engine failing some requests: recorded, counted, marked."""
import pytest
from django.test import Client
from django.urls import reverse

from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.models import Run
from runs.worker import execution
from tests.factories import EngineConfigFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def run_against(profile, params, config=None):
    with serve_in_thread(profile) as sim:
        config = config or EngineConfigFactory(
            max_tokens=8, engine__base_url=sim.url, engine__kind="llama-server", engine__simulator=True
        )
        run = RunFactory(config=config, params=params)
        assert execution.claim(run.pk) == execution.CLAIMED
        execution.execute(run.pk)
    run.refresh_from_db()
    return run


def test_it_records_every_fourth_request_failing_and_marks_the_run():
    profile = SimProfile(decode_tps=400, ttft_ms=5, fault="http-500", fault_every=4)
    run = run_against(profile, {"reps": 2, "warmup": 0})
    total = 2 * len(SPEED_PROMPTS)
    print(f"\nevery 4th request failing: {run.status}, outcomes {run.summary['outcomes']}")
    assert run.status == Run.Status.SUCCEEDED, run.error
    outcomes = run.summary["outcomes"]
    assert (outcomes["attempted"], outcomes["succeeded"], outcomes["failed"]) == (total, total - 3, 3)
    assert outcomes["failed_by_reason"] == {"http 500": 3}
    assert outcomes["cut_by_max_tokens"] == total - 3 and outcomes["stopped_early"] == 0
    assert run.summary["ttft_s"]["n"] == run.summary["decode_tps_client"]["n"] == total - 3
    failed = run.samples.filter(kind="request", values__failed="http 500")
    assert failed.count() == 3
    assert "request 4 of 12" in failed.order_by("seq").first().values["error"]
    (warning,) = [w for w in run.warnings if w["kind"] == "failed requests"]
    assert warning["failed_share"] == 0.25
    assert "3 of 12 requests failed (25.0 %: http 500 3)" in warning["message"]

    client = Client()
    client.force_login(UserFactory(is_superuser=True))
    page = client.get(run.get_absolute_url()).content.decode()
    assert f"Figures over 9 of {total} requests: 3 failed (http 500 3); 9 cut by max tokens" in page
    assert 'data-warning="failed requests"' in page
    listed = client.get(reverse("runs:list")).content.decode()
    assert "⚠ 25 % failed" in listed


def test_it_does_not_mark_a_run_without_failures():
    run = run_against(SimProfile(decode_tps=400, ttft_ms=5), {"reps": 1, "warmup": 0})
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.summary["outcomes"]["failed"] == 0 and not run.summary["outcomes"]["over_failed_share"]
    assert not [w for w in run.warnings if w["kind"] == "failed requests"]
