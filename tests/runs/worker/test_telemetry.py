"""A run's telemetry through the worker, with a recorded GB10 trace played back as its GPU."""

import json
import time

import pytest

from engines.simulator import SimProfile, serve_in_thread
from engines.telemetry import TelemetrySampler
from runs.models import Run
from runs.worker.telemetry import OFF_NOTE
from tests.runs.worker.test_execution import make_run, run_to_end
from tests.telemetry_traces import gb10_trace

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def recorded_gpu(tmp_path, settings):
    """A GB10 trace: idle 0.25 s (the baseline), then 80 W; thermal throttling from 0.6 s to 1.4 s."""

    def play(**shape):
        path = tmp_path / "trace.json"
        path.write_text(json.dumps(gb10_trace(seconds=60, rate_hz=20, idle_s=0.25, **shape)))
        settings.SPARKDASH_NVML_TRACE = str(path)
        settings.SPARKDASH_TELEMETRY_BASELINE_S = 0.25
        settings.SPARKDASH_TELEMETRY_HZ = 20.0

    return play


def test_it_flags_a_thermally_throttled_run_with_how_long(recorded_gpu):
    recorded_gpu(throttle=(0.6, 1.4))
    # Four requests: the run outlasts the throttled window by a second or more. With two it ended
    # 1.2 s in once its summary took less time (bootstrap drawn by numpy), and saw 0.6 s of it.
    with serve_in_thread(SimProfile(decode_tps=100, ttft_ms=5)) as sim:
        run = run_to_end(make_run(sim.url, {"reps": 4, "warmup": 0}))
    assert run.status == Run.Status.SUCCEEDED, run.error
    telemetry = run.summary["telemetry"]
    assert telemetry["gpu"] and telemetry["sources"] == ["host", "nvml (recorded trace)"]
    assert telemetry["gpus"][0]["name"] == "NVIDIA GB10" and telemetry["memory_source"] == "meminfo"
    throttle = telemetry["throttle"]
    assert throttle["throttled"] and throttle["throttled_s"] == pytest.approx(0.8, abs=0.2)
    assert throttle["reasons_s"]["thermal"] == pytest.approx(0.8, abs=0.2)
    warning = next(w for w in run.warnings if w["kind"] == "throttled")
    assert warning["throttled_s"] == throttle["throttled_s"] and "thermal" in warning["message"]
    assert telemetry["baseline"]["power_w"] == 18.0


def test_it_computes_joules_per_token_over_the_idle_baseline(recorded_gpu):
    recorded_gpu()
    with serve_in_thread(SimProfile(decode_tps=100, ttft_ms=5)) as sim:
        run = run_to_end(make_run(sim.url, {"reps": 1, "warmup": 0}))
    energy = run.summary["telemetry"]["energy"]
    assert energy["power_source"] == "gpu" and energy["baseline_w"] == 18.0
    requests = [s.values for s in run.samples.filter(kind="request")]
    decode_s = sum(r["e2e_s"] - r["ttft_s"] for r in requests)
    tokens = sum(r["output_tokens"] for r in requests)
    # Every request ran after the idle part: (80 - 18) W over its decode time.
    assert energy["j_per_token"] == pytest.approx(62.0 * decode_s / tokens, rel=0.02)
    assert energy["tokens"] == tokens and set(energy["by_output_type"]) == {
        r["output_type"] for r in requests
    }
    assert not run.summary["telemetry"]["throttle"]["throttled"]
    assert not [w for w in run.warnings if w["kind"] == "throttled"]


def test_it_preheats_until_the_recorded_gpu_settles(recorded_gpu, settings):
    recorded_gpu()
    settings.SPARKDASH_PREHEAT_SETTLE_S = 0.5
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        run = run_to_end(make_run(sim.url, preheat_s=30))
    preheat = run.summary["preheat"]
    assert preheat["settled"] is True and preheat["requests"] >= 1 and preheat["s"] < 10
    phases = [s.values["phase"] for s in run.samples.filter(kind="telemetry").order_by("seq")]
    assert phases.index("baseline") < phases.index("preheat") < phases.index("job")


def test_it_samples_nothing_with_telemetry_off_and_says_so(settings, monkeypatch):
    settings.SPARKDASH_TELEMETRY_HZ = 0.0
    settings.SPARKDASH_TELEMETRY_BASELINE_S = 0.3
    starts = []
    monkeypatch.setattr(TelemetrySampler, "start", lambda self: starts.append(self))
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        started = time.monotonic()
        run = run_to_end(make_run(sim.url, {"reps": 1, "warmup": 0}))
        took = time.monotonic() - started
    assert run.status == Run.Status.SUCCEEDED, run.error
    telemetry = run.summary["telemetry"]
    assert telemetry["off"] and telemetry["note"] == OFF_NOTE and telemetry["energy_note"] == OFF_NOTE
    assert telemetry["gpu"] is False and telemetry["readings"] == 0 and telemetry["sampler_cpu_s"] == 0
    assert telemetry["energy"] is None and not telemetry["throttle"]["throttled"]
    assert not run.samples.filter(kind="telemetry").exists()
    assert run.samples.filter(kind="request").exists()
    assert took >= 0.3  # the baseline still waits: the same other work as a run with telemetry on
    assert starts == []  # no sampler thread


def test_it_marks_the_throttled_run_in_compare(recorded_gpu, alice_client):
    from django.urls import reverse

    runs = {}
    for name, shape in (("hot-box", {"throttle": (0.6, 1.4)}), ("cool-box", {})):
        recorded_gpu(**shape)
        with serve_in_thread(SimProfile(decode_tps=100, ttft_ms=5)) as sim:
            runs[name] = run_to_end(make_run(sim.url, {"reps": 1, "warmup": 0}))
        runs[name].config.name = name
        runs[name].config.save()
    configs = ",".join(str(r.config.pk) for r in runs.values())
    response = alice_client.get(reverse("runs:compare"), {"configs": configs})
    marks = {c.name: mark for c, mark, _failed, _bound, _mismatch in response.context["comparison"].columns}
    throttled_s = runs["hot-box"].summary["telemetry"]["throttle"]["throttled_s"]
    assert marks["hot-box"]["text"] == f"throttled {throttled_s:.1f} s" and marks["cool-box"] is None
    assert "J per output token" in response.content.decode()
