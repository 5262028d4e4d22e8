"""CSV cells a spreadsheet reads as text, never as a formula.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is taken as a
formula by spreadsheet programs (``=HYPERLINK(...)`` becomes a live link); such a cell gets a
leading single quote, which spreadsheets show as text. Every CSV export writes its cells
through :func:`safe_cell`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FORMULA_STARTS", "safe_cell", "safe_row"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> str:
    """``value`` as CSV cell text, with a leading quote when it would start a formula.

    None becomes the empty string. Numbers are written as they are: a negative number
    (``-3``) is data, not a formula, and stays a number.
    """
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def safe_row(values: Iterable[object]) -> list[str]:
    """Each cell of ``values`` (an iterable) through :func:`safe_cell`."""
    return [safe_cell(value) for value in values]
