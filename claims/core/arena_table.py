"""A recipe author's measured table, pasted as Markdown, read into a claim's figures.

Two shapes are read: llama-benchy's own table (a ``test`` column such as ``tg128 (c4)`` or
``pp2048 @ c1``, ``t/s (req)`` per stream, ``t/s (total)``, ``e2e_ttft (ms)``/``ttfr (ms)``, each
"value ± spread"), and a plain one with a concurrency column (``c1``, ``1``), a decode column
(its header says decode or t/s) and a TTFT column (ms, or s where the header says so). Decode is
read from generation rows (``tg``) or rows without a test, TTFT from any row that has it.
A cell that is not a number is refused naming its row and column. Plain Python, no Django.
"""

from __future__ import annotations

import math
import re
from typing import Any

from claims.core.schema import ClaimRefused
from measure.words import gettext_noop

__all__ = ["MAX_TABLE_CHARS", "read_table"]

MAX_TABLE_CHARS = 64 * 1024
LEVEL = re.compile(r"(?:\(\s*c|@\s*c|\bc)(\d{1,3})\b", re.IGNORECASE)
NUMBER = re.compile(
    r"^\s*([-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?:(?:±|\+/-)\s*(\d[\d,]*(?:\.\d+)?))?"
)


def read_table(name: str, text: str) -> list[dict[str, Any]]:
    """The figures the table states, as a claim file's ``figures`` entries (metric, concurrency,
    value, spread where stated); ClaimRefused when it states none or a cell is not a number."""
    if len(text) > MAX_TABLE_CHARS:
        raise ClaimRefused(
            gettext_noop("%(name)s is larger than %(kib)s KiB"), name=name, kib=MAX_TABLE_CHARS >> 10
        )
    rows = [_cells(line) for line in text.splitlines() if line.strip().startswith("|")]
    rows = [r for r in rows if not all(re.fullmatch(r":?-+:?", c) for c in r if c)]
    if len(rows) < 2:
        raise ClaimRefused(gettext_noop("%(name)s: not a Markdown table with a header and a row"), name=name)
    header = [h.lower() for h in rows[0]]
    columns = _columns(header)
    figures: dict[tuple[str, int], dict[str, Any]] = {}
    for number, row in enumerate(rows[1:], 1):
        cells = dict(zip(header, row, strict=False))
        level = _level(cells, columns)
        for metric, column, scale in _wanted(cells, columns):
            found = _number(name, number, column, cells.get(column, ""))
            if found is not None:
                value, spread = found
                figure = {"metric": metric, "concurrency": level, "value": round(value * scale, 6)}
                if spread is not None:
                    figure["spread"] = round(spread * scale, 6)
                figures.setdefault((metric, level), figure)
    if not figures:
        raise ClaimRefused(
            gettext_noop("%(name)s: no row states a decode speed or a TTFT at a concurrency level"), name=name
        )
    return sorted(figures.values(), key=lambda f: (f["metric"], f["concurrency"]))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _columns(header: list[str]) -> dict[str, str | None]:
    def first(*tests: Any) -> str | None:
        for test in tests:
            for h in header:
                if test(h):
                    return h
        return None

    return {
        "test": first(lambda h: h == "test"),
        "level": first(lambda h: h in ("concurrency", "c", "streams", "level")),
        "stream": first(
            lambda h: "(req)" in h and "peak" not in h,
            lambda h: "decode" in h and "total" not in h,
            lambda h: h in ("t/s", "tok/s", "tokens/s"),
        ),
        "total": first(lambda h: "total" in h and ("t/s" in h or "tok/s" in h or "decode" in h)),
        "ttft": first(lambda h: "e2e_ttft" in h, lambda h: "ttft" in h, lambda h: "ttfr" in h),
    }


def _level(cells: dict[str, str], columns: dict[str, str | None]) -> int:
    for key in ("level", "test"):
        column = columns[key]
        cell = cells.get(column, "") if column else ""
        if key == "level" and cell.strip().lower().lstrip("c").isdigit():
            return int(cell.strip().lower().lstrip("c"))
        if match := LEVEL.search(cell):
            return int(match.group(1))
    return 1


def _wanted(cells: dict[str, str], columns: dict[str, str | None]) -> list[tuple[str, str, float]]:
    """(metric, column, scale to the claim's unit) that this row may state."""
    test = cells.get(columns["test"] or "", "").strip().lower()
    wanted: list[tuple[str, str, float]] = []
    if not test or test.startswith("tg"):
        wanted += [
            (m, c, 1.0)
            for m, c in (("decode_tps", columns["stream"]), ("decode_tps_total", columns["total"]))
            if c
        ]
    if ttft := columns["ttft"]:
        seconds = "(s)" in ttft and "(ms)" not in ttft
        wanted.append(("ttft_ms", ttft, 1000.0 if seconds else 1.0))
    return wanted


def _number(name: str, row: int, column: str, cell: str) -> tuple[float, float | None] | None:
    """(value, spread) of a cell; None for an empty one; ClaimRefused for one that is not a number."""
    if not cell.strip() or cell.strip() in ("-", "—", "n/a"):
        return None
    match = NUMBER.match(cell)
    value = float(match.group(1).replace(",", "")) if match else math.nan
    if not math.isfinite(value) or value <= 0:
        raise ClaimRefused(
            gettext_noop("%(name)s: row %(row)s, column %(column)s: %(cell)s is not a number above 0"),
            name=name,
            row=row,
            column=column,
            cell=cell[:40],
        )
    spread = float(match.group(2).replace(",", "")) if match and match.group(2) else None
    return value, spread
