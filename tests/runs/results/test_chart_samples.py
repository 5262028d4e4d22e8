from __future__ import annotations

import pytest
from django.urls import reverse

from runs.models import Run, Sample
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db

SPIKE = 1234


def _long_run(job: str = "speed", requests: int = 3000) -> Run:
    """A run with an engine sample first, then `requests` request samples, one of them a spike."""
    run = RunFactory(job=job, status=Run.Status.SUCCEEDED)
    rows = [Sample(run=run, seq=0, t=0.0, kind="engine", values={"startup_s": 2.5})]
    for i in range(requests):
        tps = 500.0 if i == SPIKE else 40.0 + i % 7
        values = {"decode_tps_client": tps, "decode_tps_engine": tps, "ttft_s": 0.2, "acceptance_rate": None}
        rows.append(Sample(run=run, seq=i + 1, t=float(i), kind="request", values=values))
    Sample.objects.bulk_create(rows)
    return run


def _get(client, run: Run, **params) -> list[dict]:
    response = client.get(reverse("runs:api-samples", args=[run.pk]), params)
    assert response.status_code == 200
    return response.json()["samples"]


def test_it_thins_a_long_speed_run_to_max_points(alice_client):
    run = _long_run()
    samples = _get(alice_client, run, after=-1, max_points=500)
    seqs = [s["seq"] for s in samples]
    assert len(samples) <= 500
    assert seqs == sorted(seqs)
    assert seqs[0] == 0 and seqs[-1] == 3000  # the engine sample and the last one
    assert SPIKE + 1 in seqs
    requests = [s for s in samples if s["kind"] == "request"]
    assert all(s["n"] == s["seq"] for s in requests)  # request number i has seq i here
    assert samples[0]["values"] == {"startup_s": 2.5}
    spike = next(s for s in samples if s["seq"] == SPIKE + 1)
    assert spike["values"] == {
        "decode_tps_client": 500.0, "decode_tps_engine": 500.0, "ttft_s": 0.2, "acceptance_rate": None
    }


def test_it_numbers_requests_after_the_seq_asked_for(alice_client):
    run = _long_run()
    samples = _get(alice_client, run, after=1000, max_points=500)
    assert samples[0]["seq"] > 1000 and samples[-1]["seq"] == 3000
    assert all(s["n"] == s["seq"] for s in samples)


def test_it_sends_every_sample_without_max_points_or_when_they_fit(alice_client):
    run = _long_run(requests=300)
    assert len(_get(alice_client, run, after=-1)) == 301
    assert len(_get(alice_client, run, after=-1, max_points=500)) == 301


def test_it_never_thins_a_job_whose_charts_are_medians(alice_client):
    run = _long_run(job="lookahead")
    assert len(_get(alice_client, run, after=-1, max_points=500)) == 3001


def test_it_still_answers_when_a_charted_value_is_not_a_number(alice_client):
    run = _long_run()
    Sample.objects.filter(run=run, seq=5).update(values={"decode_tps_client": "fast"})
    samples = _get(alice_client, run, after=-1, max_points=500)
    assert len(samples) <= 500 and samples[-1]["seq"] == 3000
    assert [s["seq"] for s in samples] == sorted({s["seq"] for s in samples})
    assert all(s["values"].get("decode_tps_client") != "fast" for s in samples)
