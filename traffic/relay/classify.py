"""An answer's output type, read from what the engine answered (not from what was asked).

First match wins:
1. ``tool-call``: the answer holds at least one tool call;
2. ``table``: its text holds a markdown table (two or more lines that start and end with ``|``);
3. ``prose-ja``: Japanese script (kana or kanji) makes up a sizeable share of its letters;
4. ``prose-en``: any other text;
and ``""`` when there is no answer at all.
"""
from __future__ import annotations

import re

__all__ = ["JAPANESE_SHARE", "output_type"]

JAPANESE = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
# A share, not any Japanese character: an English answer quoting one kanji is still English.
JAPANESE_SHARE = 0.2


def output_type(text: str, tool_calls: int = 0) -> str:
    """The output type of an answer with this text and this many tool calls."""
    if tool_calls:
        return "tool-call"
    if not text.strip():
        return ""
    if _table_lines(text) >= 2:
        return "table"
    letters = sum(1 for ch in text if ch.isalnum())
    if letters and len(JAPANESE.findall(text)) / letters >= JAPANESE_SHARE:
        return "prose-ja"
    return "prose-en"


def _table_lines(text: str) -> int:
    lines = (line.strip() for line in text.splitlines())
    return sum(1 for line in lines if len(line) >= 2 and line.startswith("|") and line.endswith("|"))
