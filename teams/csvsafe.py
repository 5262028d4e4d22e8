"""CSV cells a spreadsheet opens as text: no formula from a name someone typed.

A cell that starts with ``= + - @``, a tab or a carriage return is read as a formula by Excel,
LibreOffice and Sheets (``=HYPERLINK(...)``, ``@SUM(...)``, ``-2+3``). Such text gets a leading
apostrophe, which those programs show as text (OWASP's advice for CSV injection). Numbers stay
numbers: a value that is an int or float, or text that is exactly a number such as ``-1.5``,
is written as it is, since a spreadsheet reads it as that number and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["FORMULA_STARTS", "safe_cell", "safe_row"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: object) -> str:
    """``value`` as a CSV cell's text: None is empty, a number as written, formula-like text quoted."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    if text.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def safe_row(values: Iterable[object]) -> list[str]:
    """Each cell of ``values`` (an iterable) through :func:`safe_cell`."""
    return [safe_cell(value) for value in values]
