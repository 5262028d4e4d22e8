"""Tests for teams.csvsafe: CSV cells that would start a formula open as text."""

from __future__ import annotations

import pytest

from teams.csvsafe import safe_cell, safe_row

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1+2", "@SUM(A1)", "\tx", "\rx", "=HYPERLINK(\"x\")"])
def test_it_quotes_a_cell_that_would_start_a_formula(text: str) -> None:
    assert safe_cell(text) == "'" + text


def test_it_leaves_plain_text_numbers_and_none_readable() -> None:
    assert safe_row(["llama 8B", 3, -2.5, None, "a=b"]) == ["llama 8B", "3", "-2.5", "", "a=b"]
