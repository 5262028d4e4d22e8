"""The export helpers: per-position acceptance as columns acceptance_pos_1 .. _k, in %."""
from __future__ import annotations

import pytest

from runs.results.export import position_columns, position_values

pytestmark = pytest.mark.backend_free


def test_it_writes_a_runs_acceptance_by_position_in_percent():
    assert position_values([0.9, 0.75, 0.6, 0.45]) == {
        "acceptance_pos_1": 90.0, "acceptance_pos_2": 75.0, "acceptance_pos_3": 60.0,
        "acceptance_pos_4": 45.0,
    }
    assert position_values(None) == {}


def test_it_gives_columns_for_the_most_positions_of_any_row():
    rows = [{"id": 1} | position_values([0.8, 0.6]), {"id": 2}, {"id": 3} | position_values([0.9, 0.7, 0.5])]
    assert position_columns(rows) == ["acceptance_pos_1", "acceptance_pos_2", "acceptance_pos_3"]
    assert position_columns([{"id": 1}]) == []
