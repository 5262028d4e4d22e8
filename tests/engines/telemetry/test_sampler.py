import time

import pytest

from engines.telemetry import TelemetrySampler, machine_sources
from engines.telemetry.recorded import RecordedNvml
from tests.telemetry_traces import gb10_trace

pytestmark = pytest.mark.backend_free


class Broken:
    name = "broken"

    def read(self, t):
        raise OSError("gone")


def test_it_reads_its_sources_at_its_rate_on_a_thread_of_its_own():
    sources, _ = machine_sources(RecordedNvml(gb10_trace()))
    sampler = TelemetrySampler(sources, rate_hz=20)
    sampler.start()
    time.sleep(0.5)
    sampler.phase = "job"
    time.sleep(0.3)
    sampler.stop()
    readings = sampler.readings
    assert 12 <= len(readings) <= 18  # 0.8 s at 20 Hz
    assert readings[0]["phase"] == "load" and readings[-1]["phase"] == "job"
    assert {"cpu_load", "mem_used_bytes", "power_w", "sm_clock_mhz"} <= readings[-1].keys()
    assert sampler.gpu and sampler.drain() == readings and sampler.drain() == []
    assert 0 < sampler.cpu_s < 0.1


def test_it_keeps_sampling_when_one_source_fails():
    sampler = TelemetrySampler([Broken(), *machine_sources(RecordedNvml(gb10_trace()))[0]])
    reading = sampler.read_once()
    assert "power_w" in reading and "gone" in sampler.failures["broken"]


def test_it_refuses_a_rate_it_cannot_keep():
    with pytest.raises(ValueError, match="telemetry rate"):
        TelemetrySampler([], rate_hz=500)
