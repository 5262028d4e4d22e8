"""engines.roofline: the decode ceiling from bandwidth and bytes per token, and efficiency."""
from __future__ import annotations

import pytest

from engines.roofline import ceiling_tps, efficiency, roofline


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
    }


@pytest.mark.parametrize(("bandwidth", "per_token"), [(0, 1e9), (-1, 1e9), (273, 0)])
def test_it_rejects_a_non_positive_input(bandwidth: float, per_token: float) -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        ceiling_tps(bandwidth, per_token)


def test_it_rejects_a_non_positive_ceiling() -> None:
    with pytest.raises(ValueError, match="ceiling"):
        efficiency(7.9, 0)
