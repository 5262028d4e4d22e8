"""Ids that users type: what counts as a key, so that a number too big for the database is an
unknown id (a 404, or a filter that matches nothing) and never reaches a query (a 500).
"""
from __future__ import annotations

__all__ = ["MAX_KEY", "parse_key"]

# Every primary key is a BigAutoField (settings.DEFAULT_AUTO_FIELD): a signed 64-bit integer.
MAX_KEY = 2**63 - 1
# Enough digits for MAX_KEY, so int() never reads an arbitrarily long string.
MAX_DIGITS = len(str(MAX_KEY))


def parse_key(text: str) -> int | None:
    """The key `text` names (ASCII digits, 1..MAX_KEY), or None when it can name no row."""
    text = text.strip()
    if not text or len(text) > MAX_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    key = int(text)
    return key if 1 <= key <= MAX_KEY else None
