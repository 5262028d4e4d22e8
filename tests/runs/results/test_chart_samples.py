from __future__ import annotations

import pytest
from django.urls import reverse

from runs.models import Run, Sample
from tests.factories import RunFactory, telemetry_values

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


def _telemetry_run(job: str = "speed", readings: int = 3000, requests: int = 0) -> Run:
    """A run with `readings` 10 Hz GPU telemetry samples (baseline first, then job, one throttled
    span of 30 readings and one power spike) and `requests` request samples after them."""
    run = RunFactory(job=job, status=Run.Status.SUCCEEDED)
    rows = []
    for i in range(readings):
        phase = "baseline" if i < BASELINE else "job"
        throttle = ["thermal"] if THROTTLED <= i < THROTTLED + 30 else []
        values = telemetry_values(phase, gpu=True, throttle=throttle)
        values["power_w"] = 900.0 if i == SPIKE else 60.0 + i % 5
        # Each field peaks at its own readings, so each bucket keeps several samples.
        values.update(cpu_load=i * 7 % 13 / 13, sm_clock_mhz=2000 + i * 11 % 23, temperature_c=50 + i % 17)
        rows.append(Sample(run=run, seq=i, t=i / 10, kind="telemetry", values=values))
    for i in range(requests):
        values = {"decode_tps_client": 40.0 + i % 7, "decode_tps_engine": 41.0, "ttft_s": 0.2}
        rows.append(Sample(run=run, seq=readings + i, t=float(i), kind="request", values=values))
    Sample.objects.bulk_create(rows)
    return run


BASELINE, THROTTLED = 20, 2000


def test_it_thins_telemetry_keeping_phase_changes_throttle_spans_and_spikes(alice_client):
    run = _telemetry_run()
    samples = _get(alice_client, run, after=-1, max_points=500)
    by_seq = {s["seq"]: s for s in samples}
    assert len(samples) <= 500 + 4  # the span edges may come on top of the share
    assert {0, 2999, SPIKE} <= set(by_seq)
    assert {BASELINE - 1, BASELINE, THROTTLED - 1, THROTTLED, THROTTLED + 29, THROTTLED + 30} <= set(by_seq)
    assert by_seq[BASELINE - 1]["values"]["phase"] == "baseline"
    assert by_seq[BASELINE]["values"]["phase"] == "job"
    assert by_seq[THROTTLED]["values"]["throttle"] == ["thermal"]
    assert by_seq[THROTTLED - 1]["values"]["throttle"] == []
    assert by_seq[SPIKE]["values"]["power_w"] == 900.0
    assert set(by_seq[0]["values"]) == {
        "cpu_load", "mem_used_bytes", "power_w", "sm_clock_mhz", "temperature_c", "phase", "throttle"
    }


def test_it_gives_requests_and_telemetry_each_their_share(alice_client):
    run = _telemetry_run(readings=3000, requests=3000)
    samples = _get(alice_client, run, after=-1, max_points=1000)
    kinds = [s["kind"] for s in samples]
    # Each kind within its half (min/max per bucket keep fewer when one sample holds several).
    assert 100 < kinds.count("request") <= 500
    assert 100 < kinds.count("telemetry") <= 500 + 4
    assert samples[-1]["seq"] == 5999 and samples[-1]["n"] == 3000


def test_it_gives_telemetry_what_few_requests_leave(alice_client):
    few = [s["kind"] for s in _get(alice_client, _telemetry_run(requests=10), after=-1, max_points=600)]
    many = [s["kind"] for s in _get(alice_client, _telemetry_run(requests=3000), after=-1, max_points=600)]
    assert few.count("request") == 10
    assert many.count("telemetry") <= 300 + 4 < few.count("telemetry") <= 590 + 4


def test_it_thins_the_telemetry_of_a_job_whose_charts_are_medians(alice_client):
    run = _telemetry_run(job="lookahead", readings=3000, requests=100)
    samples = _get(alice_client, run, after=-1, max_points=500)
    kinds = [s["kind"] for s in samples]
    assert kinds.count("request") == 100  # kept whole: its charts are medians
    assert "n" not in samples[-1] and samples[-1]["values"]["decode_tps_client"] is not None
    assert 100 < kinds.count("telemetry") <= 404
