"""Reading llama-server log lines (its own, or Ollama's child's): draft acceptance, cache drops, errors.

One line in, at most one LogEvent out; no Django import, no I/O. The formats are llama.cpp's
(`tools/server/server-context.cpp` `print_timings`, `server-task.cpp` prompt cache,
`common/log.cpp` prefixes); the figures they feed are in docs/metrics.md.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["ACCEPTANCE_RE", "LogEvent", "parse_line"]

# Every version: up to b9229 "draft acceptance rate = R (A accepted / G generated)";
# b9230-b9828 adds ", mean acceptance length = L"; b9829+ says "draft acceptance = ..., mean len = L".
ACCEPTANCE_RE = re.compile(
    r"draft acceptance(?: rate)? = ([\d.]+) \(\s*(\d+) accepted /\s*(\d+) generated\)"
    r"(?:, mean (?:len|acceptance length) =\s*([\d.]+))?"
)
CACHE_DISCARD_MARK = "exceeds cache size limit"

# Colours are on when llama-server writes to a terminal (or with --color on).
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# With --log-prefix: an optional "M.ss.mmm.uuu " timestamp, then the level letter and a space.
_ERROR_PREFIX = re.compile(r"^(?:\d+\.\d{2}\.\d{3}\.\d{3} )?E (?P<msg>.+)")
# Without the prefix only the text is left: llama-server's own error reports ("srv  send_error: ...
# error: ...", "slot ...: ... error: ...") and argument errors ("error: invalid argument: --foo").
_ERROR_TEXT = re.compile(r"^(?:error: |error while handling |(?:srv|slot) +\S+: .*\berror: )")

# What a log line reports (a LogEvent's `event`).
EventName = Literal["acceptance", "cache-discard", "error"]


@dataclass(frozen=True)
class LogEvent:
    """One thing of interest in an engine log line.

    For "acceptance": rate, accepted, generated, and mean_len (None before b9230).
    For "cache-discard" and "error": text is the line (trimmed, colours removed).
    """

    event: EventName
    text: str
    rate: float | None = None
    accepted: int | None = None
    generated: int | None = None
    mean_len: float | None = None


def parse_line(line: str) -> LogEvent | None:
    """The event a log line reports, or None for every other line.

    :param line: one line as the engine wrote it, with or without the trailing newline.
    """
    text = _ANSI.sub("", line).strip()
    if text.startswith("{"):
        return _parse_jsonl(text)
    return _parse_text(text)


def _parse_text(text: str) -> LogEvent | None:
    match = ACCEPTANCE_RE.search(text)
    if match:
        rate, accepted, generated, mean_len = match.groups()
        return LogEvent(
            "acceptance",
            text,
            rate=float(rate),
            accepted=int(accepted),
            generated=int(generated),
            mean_len=float(mean_len) if mean_len else None,
        )
    if CACHE_DISCARD_MARK in text:
        return LogEvent("cache-discard", text)
    if _ERROR_PREFIX.match(text) or _ERROR_TEXT.match(text):
        return LogEvent("error", text)
    return None


def _parse_jsonl(text: str) -> LogEvent | None:
    """A `--log-jsonl` line: {"type": "log", "level": ..., "msg": ...}; other JSON is not a log line."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("type") != "log" or not isinstance(record.get("msg"), str):
        return None
    msg = record["msg"].strip()
    if record.get("level") == "error":
        return LogEvent("error", msg)
    event = _parse_text(msg)
    # The level is known here, so the text is not guessed at for errors.
    return event if event is not None and event.event != "error" else None


def read_new_lines(path: Path, position: int | None) -> tuple[list[str], int]:
    """Lines appended to an engine's log file since `position` (None: start at the current end, as
    tail -f does) and the new position; a file that shrank (rotated, truncated) is read from 0."""
    if not path.exists():
        return [], 0
    size = path.stat().st_size
    if position is None or size < position:  # first look, or rotated/truncated
        return [], size if position is None else 0
    with path.open("rb") as handle:
        handle.seek(position)
        chunk = handle.read()
        position = handle.tell()
    return [raw.decode("utf-8", "replace") for raw in chunk.splitlines()], position
