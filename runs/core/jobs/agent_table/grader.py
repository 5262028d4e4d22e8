"""The table score: answer rows whose method and line number match a truth row.

The answer is free text from a model, so `parse_rows` reads any reasonable table: markdown
tables (outer pipes optional, alignment rows skipped), comma, semicolon or tab separated
lines, columns in any order named by a header ("line, method, path", "Method | Path | Line no."),
loose lines such as "GET /users (line 12)" or "12: get /users", JSON lists of objects, and
all of these inside code fences. Paths are read but not scored (docs/metrics.md, "table score").

Extra rows cost: `precision` is correct rows over rows answered, `f1` weighs it with recall, and
`exact` holds only for the truth table itself, so an answer listing every method on every line
scores every row but is neither precise nor exact.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runs.core.jobs.agent_table.fixture import Row

__all__ = ["Grade", "grade", "parse_rows", "table_f1"]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_METHOD = re.compile(rf"\b({'|'.join(METHODS)})\b", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w.:/])/[^\s|,;`'\"()<>\[\]]*")
# A number named as a line: "line 12", "line no. 12", "L12", "server.py:12".
_NAMED_LINE = re.compile(r"(?:\blines?(?:\s*(?:no\.?|number|#))?\s*[:#=]?\s*|\bL|(?<=\w):)(\d+)", re.I)
# A number, or the start of a range "12-15" (the range's first line counts).
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?:\s*[-\u2013]\s*\d+)?(?![\w.])")
_FENCE = re.compile(r"^(```|~~~)")
_RULE = re.compile(r"^[\s|:+=-]*-[\s|:+=-]*$")
_LIST_MARKER = re.compile(r"^(?:[-*+\u2022]|\d+[.)])\s+")
_MARKUP = re.compile(r"[*`\[\]]")
_HEADER_WORDS = {
    "method": ("method", "verb"),
    "path": ("path", "route", "url", "endpoint", "uri", "pattern"),
    "line": ("line", "ln", "lineno"),
}


@dataclass(frozen=True)
class Grade:
    """How an answer did: `score` of `rows` truth rows matched; `extra` answer rows matched none."""

    score: int
    rows: int
    matched: tuple[Row, ...]
    extra: tuple[Row, ...]
    missing: tuple[Row, ...]

    @property
    def answered(self) -> int:
        """Rows the answer gave: the matched ones and the extra ones (duplicates included)."""
        return self.score + len(self.extra)

    @property
    def precision(self) -> float | None:
        """Correct rows over rows answered; None when the answer gave no row."""
        return self.score / self.answered if self.answered else None

    @property
    def recall(self) -> float:
        """Correct rows over truth rows."""
        return self.score / self.rows if self.rows else 0.0

    @property
    def f1(self) -> float:
        """The harmonic mean of precision and recall; 0.0 when no row is correct (or none given)."""
        return table_f1(self.score, self.rows, self.answered)

    @property
    def exact(self) -> bool:
        """Every truth row there and no other row (a repeated row counts as another)."""
        return self.score == self.rows and not self.extra


def table_f1(score: int, rows: int, answered: int) -> float:
    """F1 of `score` correct rows out of `rows` truth rows and `answered` rows given."""
    if score <= 0 or not rows or not answered:
        return 0.0
    return 2 * score / (rows + answered)


def grade(answer_text: str, truth_rows: Sequence[Row]) -> Grade:
    """Score an answer: a row counts when its method and line match a truth row not yet matched."""
    unmatched = list(truth_rows)
    matched: list[Row] = []
    extra: list[Row] = []
    for row in parse_rows(answer_text):
        hit = next((t for t in unmatched if (t.method, t.line) == (row.method, row.line)), None)
        if hit is None:
            extra.append(row)
        else:
            unmatched.remove(hit)
            matched.append(hit)
    return Grade(len(matched), len(truth_rows), tuple(matched), tuple(extra), tuple(unmatched))


def parse_rows(text: str) -> list[Row]:
    """Every (method, path, line) row an answer text holds, in order, duplicates kept."""
    rows = _json_rows(text)
    if rows:
        return rows
    columns: dict[str, int] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _FENCE.match(line) or _RULE.match(line):
            continue
        cells = _cells(line)
        header = _header(cells)
        if header is not None:
            columns = header
            continue
        rows += (_by_columns(cells, columns) if columns else []) or _by_scan(line)
    return rows


def _cells(line: str) -> list[str]:
    for separator in ("|", "\t", ";", ","):
        if separator in line:
            parts = line.strip("|").split(separator) if separator == "|" else line.split(separator)
            return [_MARKUP.sub("", part).strip().strip("'\"") for part in parts]
    return [_MARKUP.sub("", line).strip()]


def _header(cells: list[str]) -> dict[str, int] | None:
    """The column of each field when `cells` is a header row (it names a line column and another)."""
    columns: dict[str, int] = {}
    for index, cell in enumerate(cells):
        words = re.findall(r"[a-z]+", cell.lower())
        field = next((f for f, names in _HEADER_WORDS.items() if any(w in names for w in words)), None)
        if field and field not in columns and not _METHOD.fullmatch(cell) and not cell.startswith("/"):
            columns[field] = index
    short = all(len(cell.split()) <= 3 and not any(c.isdigit() for c in cell) for cell in cells)
    return columns if "line" in columns and len(columns) >= 2 and short else None


def _by_columns(cells: list[str], columns: dict[str, int]) -> list[Row]:
    """Rows from a line split into the header's columns; [] when it does not fit them."""
    if len(cells) <= max(columns.values()):
        return []
    path_cell = cells[columns["path"]] if "path" in columns else ""
    path = _first(_PATH.findall(path_cell), path_cell)
    method_cell = cells[columns["method"]] if "method" in columns else _PATH.sub(" ", path_cell)
    line = _line_number(cells[columns["line"]])
    methods = _METHOD.findall(method_cell)
    if line is None or not methods:
        return []
    return [Row(method.upper(), path, line) for method in methods]


def _by_scan(line: str) -> list[Row]:
    """One row from a loose line: a method, and a path or a number named as a line."""
    text = _LIST_MARKER.sub("", _MARKUP.sub("", line))
    paths = _PATH.findall(text)
    rest = _PATH.sub(" ", text)
    method = _METHOD.search(rest)
    line_number = _line_number(rest)
    if method is None or line_number is None or not (paths or _NAMED_LINE.search(rest)):
        return []
    return [Row(method.group(1).upper(), _first(paths, ""), line_number)]


def _line_number(text: str) -> int | None:
    """The number named as a line, else the last number (the first of a range)."""
    named = _NAMED_LINE.search(text)
    if named:
        return int(named.group(1))
    numbers = _NUMBER.findall(text)
    return int(numbers[-1]) if numbers else None


def _json_rows(text: str) -> list[Row]:
    """Rows from a JSON list of objects with method and line keys; [] when the text is not one."""
    start, end = text.find("["), text.rfind("]")
    try:
        data = json.loads(text[start:end + 1]) if 0 <= start < end else None
    except ValueError:
        return []
    items = data if isinstance(data, list) else []
    return [row for item in items if isinstance(item, dict) for row in _json_row(item)]


def _json_row(item: dict) -> Iterable[Row]:
    keys = {str(key).lower(): value for key, value in item.items()}
    method = str(keys.get("method", "")).upper()
    line = next((v for k, v in keys.items() if "line" in k), None)
    number = _line_number(str(line)) if line is not None else None
    if method in METHODS and number is not None:
        yield Row(method, str(keys.get("path", keys.get("route", ""))), number)


def _first(items: list[str], default: str) -> str:
    return items[0] if items else default
