"""Tests for teams.csvsafe: CSV cells that would start a formula open as text; numbers stay numbers."""

from __future__ import annotations

import pytest

from teams.csvsafe import safe_cell, safe_row

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize("text", ["=1+1", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "-", "=", "-inf",
                                  "-1.5+1", "=HYPERLINK(\"x\")"])
def test_it_writes_formula_like_text_as_text(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize(("value", "cell"), [
    (-1.5, "-1.5"), (-3, "-3"), (0, "0"), (2.5e-7, "2.5e-07"), ("-1.5", "-1.5"), ("+4", "+4"),
    ("-2e3", "-2e3"),
    (None, ""), (True, "True"), ("qwen3-mtp", "qwen3-mtp"), ("a=1", "a=1"), ("", ""),
])
def test_it_keeps_numbers_and_plain_text_as_they_are(value, cell):
    assert safe_cell(value) == cell


def test_it_writes_each_cell_of_a_row_through_safe_cell():
    row = ["llama 8B", 3, -2.5, None, "a=b", "=1+1"]
    assert safe_row(row) == ["llama 8B", "3", "-2.5", "", "a=b", "'=1+1"]
