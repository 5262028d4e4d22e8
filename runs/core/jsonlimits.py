"""JSON from users, bounded in depth: a deeply nested document is refused with the limit before
Python's parser recurses into it (a RecursionError, a 500), and a stored value is checked without
recursion. Plain Python, no Django.
"""
from __future__ import annotations

import json
import re
from typing import Any

from measure.words import gettext_noop
from runs.core.refusal import Refusal

__all__ = ["MAX_JSON_DEPTH", "TooDeep", "check_depth", "loads"]

# Chat requests with tool schemas nest a dozen levels; nothing a user sends needs more than this.
MAX_JSON_DEPTH = 64
# A string (skipped whole, with its escapes) or a bracket: brackets inside strings are not nesting.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class TooDeep(Refusal):
    """JSON nested deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(gettext_noop("the JSON is nested more than %(limit)s levels deep (the limit)"),
                         limit=limit)


def loads(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads, refusing a document nested deeper than `max_depth` (TooDeep, a ValueError)."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    depth = 0
    for token in _TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > max_depth:
                raise TooDeep(max_depth)
        elif bracket in ("]", "}"):
            depth -= 1
    try:
        return json.loads(text)
    except RecursionError:
        # Only malformed text can fool the scan above; the parser's own limit then still holds.
        raise TooDeep(max_depth) from None


def check_depth(value: Any, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise TooDeep when the parsed `value` nests lists and dicts deeper than `max_depth`."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > max_depth:
            raise TooDeep(max_depth)
        stack.extend((child, depth + 1) for child in children)
