import time

import pytest

from engines.clients import GenerationRequest, client_for
from engines.simulator import SimProfile, serve_in_thread
from runs.core.preheat import NO_READINGS, preheat, settled

pytestmark = pytest.mark.backend_free

REQUEST = GenerationRequest(model="sim", messages=[{"role": "user", "content": "warm up"}], max_tokens=16)


def _steady(n, start_temp=60.0, rise=0.0):
    return [{"t": i / 10, "temperature_c": start_temp + rise * i, "sm_clock_mhz": 2470} for i in range(n)]


def test_it_calls_readings_settled_once_they_hold_steady_for_the_whole_window():
    assert settled(_steady(101), 10.0) is True
    assert settled(_steady(50), 10.0) is False  # watched for 5 s only
    assert settled(_steady(101, rise=0.05), 10.0) is False  # 5 degrees in 10 s
    assert settled([{"t": 0.0, "cpu_load": 0.5}], 10.0) is None


async def test_it_generates_until_the_readings_settle():
    started = time.monotonic()

    def readings():  # a box warming by 6 degrees a second for 0.5 s, then steady
        now = time.monotonic() - started
        return [
            {"t": t / 20, "temperature_c": 60 + 6 * min(t / 20, 0.5), "sm_clock_mhz": 2470}
            for t in range(int(now * 20) + 1)
        ]

    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        async with client_for("llama-server", sim.url) as client:
            outcome = await preheat(client, REQUEST, readings, max_s=10.0, settle_s=0.6)
    assert outcome["settled"] is True and outcome["requests"] >= 2
    # Steady once the last 0.6 s of readings are within 1 degree (from 62 degrees, reached at 0.33 s):
    # not before 0.93 s, and well before max_s.
    assert time.monotonic() - started >= 0.93 and outcome["s"] < 5.0
    assert outcome["temperature_c"] == 63.0 and outcome["note"] is None


async def test_it_warms_for_the_whole_time_when_there_is_nothing_to_settle_on():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        async with client_for("llama-server", sim.url) as client:
            outcome = await preheat(client, REQUEST, lambda: [{"t": 0.0, "cpu_load": 0.3}], max_s=0.5)
    assert outcome["settled"] is None and outcome["note"] == NO_READINGS
    assert outcome["s"] >= 0.5 and outcome["requests"] >= 1
