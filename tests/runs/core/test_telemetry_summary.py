import pytest

from runs.core.energy import Window
from runs.core.telemetry_summary import (
    NO_POWER_NOTE,
    summarize_telemetry,
    throttle_summary,
    throttled_message,
)

pytestmark = pytest.mark.backend_free

INFO = {
    "gpu": True,
    "note": None,
    "sources": ["host", "nvml"],
    "rate_hz": 10.0,
    "unified_memory": True,
    "clock_floor_mhz": 2102.1,
}


def _readings(phase_of, power_of, clock_of=lambda t: 2470, throttle_of=lambda t: []):
    return [
        {
            "t": i / 10,
            "phase": phase_of(i / 10),
            "power_w": power_of(i / 10),
            "sm_clock_mhz": clock_of(i / 10),
            "gpu_util_pct": 97,
            "throttle": throttle_of(i / 10),
            "cpu_load": 0.5,
            "mem_used_bytes": 10**9,
        }
        for i in range(100)
    ]


def test_it_counts_throttled_time_per_reason_once_a_second():
    readings = _readings(
        lambda t: "job",
        lambda t: 80.0,
        clock_of=lambda t: 1900 if 2 <= t < 5 else 2470,
        throttle_of=lambda t: ["thermal"] if 3 <= t < 6 else [],
    )
    throttle = throttle_summary(readings, 0.1, 2102.1)
    assert throttle["throttled"] and throttle["throttled_s"] == pytest.approx(4.0)  # 2-6 s
    assert throttle["reasons_s"]["thermal"] == pytest.approx(3.0)
    assert throttle["reasons_s"]["clock_below"] == pytest.approx(3.0)
    assert throttle["job_s"] == pytest.approx(10.0)
    message = throttled_message(throttle)
    assert message.startswith("throttled for 4.0 s of the 10.0 s job: thermal 3.0 s")
    assert "SM clock under 2,102 MHz while busy 3.0 s" in message


def test_it_does_not_call_the_low_clocks_of_an_idle_gpu_throttling():
    readings = [
        {"t": i / 10, "phase": "job", "sm_clock_mhz": 850, "gpu_util_pct": 0, "throttle": []}
        for i in range(10)
    ]
    assert not throttle_summary(readings, 0.1, 2102.1)["throttled"]


def test_it_summarises_baseline_job_and_energy():
    readings = _readings(lambda t: "baseline" if t < 2 else "job", lambda t: 20.0 if t < 2 else 80.0)
    summary = summarize_telemetry(readings, INFO, [Window(3.0, 3.0, 4.0, 60)])
    assert summary["baseline"]["power_w"] == 20.0 and summary["baseline"]["readings"] == 20
    assert summary["during"]["power_w"]["median"] == 80.0 and summary["memory_source"] == "meminfo"
    assert (
        summary["energy"]["j_per_token"] == pytest.approx(1.0) and summary["energy"]["power_source"] == "gpu"
    )
    assert not summary["throttle"]["throttled"] and summary["energy_note"] is None


def test_it_says_why_there_is_no_energy_without_a_power_reading():
    readings = [{"t": i / 10, "phase": "job", "cpu_load": 0.2, "mem_used_bytes": 5} for i in range(5)]
    info = INFO | {"gpu": False, "note": "no GPU telemetry on this machine", "clock_floor_mhz": None}
    summary = summarize_telemetry(readings, info, [Window(0.0, 0.1, 0.4, 3)])
    assert summary["energy"] is None and summary["energy_note"] == NO_POWER_NOTE
    assert summary["during"]["power_w"] is None and summary["during"]["cpu_load"]["median"] == 0.2
