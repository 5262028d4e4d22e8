"""The ratios of speculative decoding (measure.pooled): one definition each, None where nothing divides."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from measure import pooled

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engines", "measure", "runs", "sparkdash", "teams", "traffic")


def test_it_divides_accepted_by_drafted_tokens() -> None:
    assert pooled.acceptance(843, 1095) == pytest.approx(843 / 1095)
    assert pooled.acceptance(0, 12) == 0.0


@pytest.mark.parametrize(("accepted", "drafted"), [(0, 0), (5, 0), (0, None), (None, 10)])
def test_it_gives_no_acceptance_without_drafted_tokens_or_an_accepted_count(accepted, drafted) -> None:
    assert pooled.acceptance(accepted, drafted) is None


def test_it_counts_the_verifications_own_token_in_tokens_per_verification() -> None:
    assert pooled.tokens_per_verification(30, 10) == 4.0
    assert pooled.tokens_per_verification(0, 7) == 1.0


@pytest.mark.parametrize(("accepted", "verifications"), [(5, 0), (5, None), (None, 3)])
def test_it_gives_no_tokens_per_verification_without_verifications(accepted, verifications) -> None:
    assert pooled.tokens_per_verification(accepted, verifications) is None


def test_it_shares_each_positions_accepted_drafts_among_the_drafts() -> None:
    assert pooled.acceptance_by_position([10, 6, 2, 0], 10) == [1.0, 0.6, 0.2, 0.0]


@pytest.mark.parametrize(("counts", "drafts"), [([3, 1], 0), ([3, 1], None), ([], 4), (None, 4)])
def test_it_gives_no_positions_without_drafts_or_counts(counts, drafts) -> None:
    assert pooled.acceptance_by_position(counts, drafts) is None


def test_it_sums_positions_over_rows_of_different_lengths_leaving_out_rows_without_counts() -> None:
    rows = [([4, 2], 5), ([3, 1, 1], 4), (None, 9), ([7], 0)]
    assert pooled.summed_positions(rows) == ([7, 3, 1], 9)


def test_it_keeps_position_shares_summing_to_tokens_per_verification_less_one() -> None:
    by_position, drafts = [9, 6, 3], 10
    accepted = sum(by_position)
    shares = pooled.acceptance_by_position(by_position, drafts)
    assert sum(shares) == pytest.approx(pooled.tokens_per_verification(accepted, drafts) - 1)


def _code_files() -> list[Path]:
    paths = (path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))
    return sorted(path for path in paths if "migrations" not in path.parts)


def test_it_is_the_one_place_that_divides_accepted_by_drafted_tokens() -> None:
    division = re.compile(r"accepted\w* */ *\w*draft")
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in _code_files() for line in path.read_text(encoding="utf-8").splitlines()
        if division.search(line) and '"' not in line and "#" not in line  # code, not a docstring's words
    ]
    assert [hit for hit in found if not hit.startswith("measure/pooled.py:")] == []
    assert "measure/pooled.py: return accepted / drafted" in found
