"""Each figure's verdict, in the issue's order, from values with a known interval."""

import pytest

from claims.core.verdicts import decide, runs_needed

pytestmark = pytest.mark.backend_free

TIGHT = [50.0, 50.5, 51.0]  # median 50.5, interval inside [50, 51]


def test_it_reproduces_a_claim_inside_the_interval():
    verdict = decide(50.6, TIGHT, 5)
    assert (verdict.verdict, verdict.median, verdict.n) == ("reproduced", 50.5, 3)
    assert verdict.ci is not None and verdict.ci[0] <= 50.5 <= verdict.ci[1]


def test_it_finds_a_claim_far_above_the_measured_interval_lower():
    verdict = decide(150.0, TIGHT, 5)
    assert verdict.verdict == "lower" and verdict.delta_pct == pytest.approx((50.5 - 150) / 150 * 100)


def test_it_finds_a_claim_far_below_the_measured_interval_higher():
    assert decide(20.0, TIGHT, 5).verdict == "higher"


def test_it_reproduces_a_claim_outside_the_interval_but_within_the_tolerance():
    assert decide(52.0, TIGHT, 5).verdict == "reproduced"


def test_it_reproduces_a_claim_within_its_own_stated_spread():
    assert decide(60.0, TIGHT, 5).verdict == "lower"
    assert decide(60.0, TIGHT, 5, stated_spread=10.0).verdict == "reproduced"


def test_it_is_inconclusive_when_the_interval_is_wider_than_the_tolerance_and_says_how_many_runs():
    verdict = decide(50.0, [40.0, 50.0, 60.0], 5)
    assert verdict.verdict == "inconclusive" and verdict.runs_needed is not None and verdict.runs_needed > 3


def test_it_puts_exceeds_hardware_and_not_comparable_first():
    ceiling = {"ceiling_tps": 10.0}
    assert decide(150.0, TIGHT, 5, ceiling=ceiling, not_comparable="2 nodes").verdict == "exceeds-hardware"
    assert decide(150.0, TIGHT, 5, not_comparable="2 nodes").verdict == "not-comparable"


def test_it_says_unmeasured_without_values():
    assert decide(50.0, [], 5).verdict == "unmeasured"


def test_it_narrows_the_interval_with_the_square_of_its_width():
    assert runs_needed(3, 10.0, 5.0) == 12
