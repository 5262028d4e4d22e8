"""Which output type a request asks for, read from its text alone (the simulator knows no jobs).

The rule, first match wins (case-insensitive):
1. ``tool-call``: the text mentions a tool (``tool``, ``ツール``), JSON, or ``"arguments"``;
2. ``table``: it mentions a table (``table``, ``markdown``, ``表``);
3. ``prose-ja``: it holds Japanese script (hiragana, katakana or kanji);
4. ``prose-en``: anything else.
These are the cues of the speed job's prompt set (runs/core/jobs/prompts.py): each of its
prompts is read as the output type it is labelled with, which a test checks.
"""
from __future__ import annotations

import re

__all__ = ["output_type"]

TOOL_CUES = ("tool", "ツール", "json", '"arguments"')
TABLE_CUES = ("table", "markdown", "表")
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def output_type(text: str) -> str:
    """The output type (tool-call, table, prose-en or prose-ja) the request text asks for."""
    lowered = text.lower()
    if any(cue in lowered for cue in TOOL_CUES):
        return "tool-call"
    if any(cue in lowered for cue in TABLE_CUES):
        return "table"
    if JAPANESE.search(text):
        return "prose-ja"
    return "prose-en"
