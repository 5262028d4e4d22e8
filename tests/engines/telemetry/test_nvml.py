import pytest

from engines.telemetry.nvml import NvmlSource, open_nvml, throttle_reasons
from engines.telemetry.recorded import RecordedNvml, record_trace
from tests.telemetry_traces import HW_THERMAL, SW_POWER_CAP, gb10_trace

pytestmark = pytest.mark.backend_free


def _source(trace, at):
    source, why = open_nvml(RecordedNvml(trace, clock=lambda: at[0]))
    assert why is None
    return source


def test_it_reads_a_unified_memory_gpu_and_leaves_its_missing_figures_out():
    at = [2.0]
    source = _source(gb10_trace(), at)
    assert source.unified_memory
    assert source.gpus == [{"index": 0, "name": "NVIDIA GB10", "sm_clock_max_mhz": 3003}]
    reading = source.read(2.0)
    assert reading["power_w"] == 80.0 and reading["sm_clock_mhz"] == 2470 and reading["temperature_c"] == 70
    assert reading["gpu_util_pct"] == 97 and reading["throttle"] == []
    assert "gpu_mem_used_bytes" not in reading and "mem_clock_mhz" not in reading


def test_it_names_the_throttle_reasons_of_the_reading_in_effect():
    at = [5.5]
    source = _source(gb10_trace(throttle=(5.0, 8.0)), at)
    assert source.read(5.5)["throttle"] == ["thermal"]
    assert source.read(5.5)["sm_clock_mhz"] == 1900
    at[0] = 8.0
    assert source.read(8.0)["throttle"] == []


def test_it_groups_nvml_reason_bits_as_users_name_them():
    assert throttle_reasons(HW_THERMAL | SW_POWER_CAP | 0x08 | 0x01) == [
        "thermal",
        "power_cap",
        "hw_slowdown",
    ]
    assert throttle_reasons(0x01) == []  # idle is not throttling


def test_it_sums_power_and_takes_the_slowest_clock_over_gpus():
    trace = gb10_trace(seconds=1)
    second = [dict(r["gpus"][0], power_mw=50_000, sm_clock=2000, temperature=80) for r in trace["readings"]]
    for reading, gpu in zip(trace["readings"], second, strict=True):
        reading["gpus"].append(gpu | {"memory_used": 5_000_000})
    trace["gpus"].append({"name": "second", "sm_clock_max_mhz": 2500})
    source = _source(trace, [0.0])
    reading = source.read(0.0)
    assert (reading["power_w"], reading["sm_clock_mhz"], reading["temperature_c"]) == (68.0, 850, 80)
    assert reading["gpu_mem_used_bytes"] == 5_000_000 and not source.unified_memory


def test_it_says_why_there_is_no_gpu_when_nvml_will_not_load():
    class NoDriver:
        def nvmlInit(self):
            raise RuntimeError("NVML Shared Library Not Found")

    source, why = open_nvml(NoDriver())
    assert source is None and "NVML Shared Library Not Found" in why


def test_it_records_a_trace_that_plays_back_the_same_readings():
    played = RecordedNvml(gb10_trace(idle_s=0, throttle=(0.0, 1.0)), clock=lambda: 0.5)
    trace = record_trace(played, seconds=0.25, rate_hz=20)
    assert len(trace["readings"]) >= 3
    assert trace["readings"][0]["gpus"][0]["reasons"] == HW_THERMAL
    again = NvmlSource(RecordedNvml(trace, clock=lambda: 0.0), [0]).read(0.0)
    assert again["throttle"] == ["thermal"] and again["power_w"] == 64.0
