"""engines.roofline: the decode ceiling from bandwidth and bytes per token, and efficiency."""
from __future__ import annotations

import pytest

from engines.roofline import ceiling_tps, efficiency, roofline

pytestmark = pytest.mark.backend_free


def test_it_computes_the_seed_ceiling() -> None:
    assert ceiling_tps(273, 28.6e9) == pytest.approx(9.545, abs=1e-3)
    assert round(ceiling_tps(273, 28.6e9), 1) == 9.5


def test_it_computes_the_seed_efficiency() -> None:
    assert round(efficiency(7.9, 9.55), 2) == 0.83


def test_it_uses_the_inspected_bytes_per_token() -> None:
    line = roofline(273, 28_600_000_000, measured_tps=7.9)
    assert (line.bytes_per_token, line.bytes_source) == (28_600_000_000, "gguf")
    assert round(line.efficiency, 2) == 0.83


def test_it_lets_the_user_override_bytes_per_token() -> None:
    line = roofline(273, 246_587_904, override=28_600_000_000)
    assert line.to_dict() == {
        "bandwidth_gbps": 273,
        "bytes_per_token": 28_600_000_000,
        "bytes_source": "override",
        "ceiling_tps": pytest.approx(9.545, abs=1e-3),
        "measured_tps": None,
        "efficiency": None,
        "tokens_per_verification": None,
        "ceiling_with_drafts_tps": None,
        "measured_bandwidth_gbps": None,
        "measured_ceiling_tps": None,
        "measured_ceiling_with_drafts_tps": None,
        "measured_efficiency": None,
        "above_ceiling": False,
    }


def test_it_measures_a_drafting_run_against_the_ceiling_times_tokens_per_verification() -> None:
    # The demo's MoE: 273 / 5.8 = 47.1 tok/s plain; 4.2 tokens per verification lift it to 197.7.
    line = roofline(273, 5_800_000_000, measured_tps=150.1, tokens_per_verification=4.2)
    assert line.ceiling_tps == pytest.approx(47.07, abs=0.01)
    assert line.ceiling_with_drafts_tps == pytest.approx(197.7, abs=0.1)
    assert line.efficiency == pytest.approx(150.1 / 197.7, abs=1e-3)


def test_it_keeps_the_plain_ceiling_when_no_draft_was_accepted() -> None:
    line = roofline(273, 28_600_000_000, measured_tps=7.9, tokens_per_verification=1.0)
    assert line.ceiling_with_drafts_tps is None and round(line.efficiency, 2) == 0.83


@pytest.mark.parametrize(("bandwidth", "per_token"), [(0, 1e9), (-1, 1e9), (273, 0)])
def test_it_rejects_a_non_positive_input(bandwidth: float, per_token: float) -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        ceiling_tps(bandwidth, per_token)


def test_it_rejects_a_non_positive_ceiling() -> None:
    with pytest.raises(ValueError, match="ceiling"):
        efficiency(7.9, 0)


def test_it_holds_a_drafting_run_against_the_nominal_and_the_measured_ceiling() -> None:
    # By hand: 273e9 / 5.8e9 = 47.07 and 231e9 / 5.8e9 = 39.83 tok/s; x 4.27 = 200.99 and 170.07;
    # 153.3 tok/s is 76.3 % of the first and 90.1 % of the second.
    line = roofline(273, 5_800_000_000, measured_tps=153.3, tokens_per_verification=4.27,
                    measured_bandwidth_gbps=231)
    assert (line.ceiling_tps, line.measured_ceiling_tps) == (pytest.approx(47.07, abs=0.01),
                                                            pytest.approx(39.83, abs=0.01))
    assert line.ceiling_with_drafts_tps == pytest.approx(201.0, abs=0.05)
    assert line.measured_ceiling_with_drafts_tps == pytest.approx(170.1, abs=0.05)
    assert line.efficiency == pytest.approx(0.763, abs=5e-4)
    assert line.measured_efficiency == pytest.approx(0.901, abs=5e-4)
    assert line.measured_bandwidth_gbps == 231 and line.above_ceiling is False


def test_it_flags_a_plain_run_above_its_ceiling() -> None:
    # 273 / 5.8 = 47.07 tok/s nominal, 231 / 5.8 = 39.83 measured: 42 tok/s is above only the measured one.
    between = roofline(273, 5_800_000_000, measured_tps=42.0, measured_bandwidth_gbps=231)
    assert between.above_ceiling is True and between.efficiency < 1 < between.measured_efficiency
    assert between.measured_ceiling_with_drafts_tps is None
    above = roofline(273, 5_800_000_000, measured_tps=50.0)
    assert above.above_ceiling is True and above.efficiency == pytest.approx(50 / 47.07, abs=1e-3)
    assert roofline(273, 5_800_000_000, measured_tps=47.0).above_ceiling is False
