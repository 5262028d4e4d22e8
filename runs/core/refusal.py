"""A refused value whose message a page can show in the reader's language. Plain Python, no Django.

str() is the English message (logs, the bench command, tests); `text` is the marked template
(measure.words.gettext_noop) and `values` fill its %(name)s holes. A value may itself be a
Refusal (a parameter's name before the file's own complaint): a page translates it too.
"""
from __future__ import annotations

from typing import Any

__all__ = ["Refusal"]


class Refusal(ValueError):
    """A ValueError with its marked English template and the values that fill it."""

    def __init__(self, text: str, **values: Any) -> None:
        super().__init__(text % values)
        self.text, self.values = text, values
