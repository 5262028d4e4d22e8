from __future__ import annotations

import pytest

from runs.core.hardware import NO_ENERGY, energy_note, energy_of, throttle_text, throttled_s
from tests.factories import telemetry, throttled_warning

pytestmark = pytest.mark.backend_free


def test_it_reads_throttled_seconds_from_the_summary_or_the_warning():
    assert throttled_s({"telemetry": telemetry(throttled_s=12.3)}) == 12.3
    assert throttled_s({"telemetry": telemetry()}) is None
    assert throttled_s({}, [throttled_warning(4.5)]) == 4.5
    assert throttled_s(None, [{"kind": "other"}]) is None
    assert throttle_text(12.34) == "throttled 12.3 s"


def test_it_reads_energy_or_says_why_there_is_none():
    assert energy_of({"telemetry": telemetry(1.2, 60.0)})["j_per_request"] == 60.0
    assert energy_of({"telemetry": telemetry()}) is None
    assert energy_note({"telemetry": telemetry()}) == "no power reading on this machine"
    assert energy_note({}) == NO_ENERGY
