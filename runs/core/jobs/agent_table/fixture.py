"""Agent-table fixtures: one folder holding the source file the agent reads and `truth.csv`.

`truth.csv` has the header `method,path,line`: each route's HTTP method, its path as written
in the source, and the line number of the if-statement that matches it. The truth is data, so a
fixture can be any app in any language; the tools never show `truth.csv` to the model.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FIXTURES_DIR", "TRUTH_FILE", "Fixture", "Row", "fixture_dir", "load_fixture"]

FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"
TRUTH_FILE = "truth.csv"
TRUTH_HEADER = ("method", "path", "line")


@dataclass(frozen=True)
class Row:
    """One row of a route table; `path` is "" where an answer gave none."""

    method: str
    path: str
    line: int


@dataclass(frozen=True)
class Fixture:
    """A fixture folder: `source` is the file (relative to `root`) the task asks about."""

    name: str
    root: Path
    source: str
    truth: tuple[Row, ...]


def fixture_dir(value: str | Path) -> Path:
    """A shipped fixture's folder for a bare name ("routes_47"), else `value` as a path."""
    path = Path(value)
    if len(path.parts) == 1 and (FIXTURES_DIR / path).is_dir():
        return FIXTURES_DIR / path
    return path


def load_fixture(value: str | Path) -> Fixture:
    """Load a fixture folder: exactly one source file besides truth.csv.

    Raises ValueError naming what is wrong with the folder or its truth.csv.
    """
    root = fixture_dir(value).resolve()
    if not root.is_dir():
        raise ValueError(f"no fixture folder at {root}")
    sources = [p.name for p in sorted(root.iterdir()) if p.is_file() and _served(p.name)]
    if len(sources) != 1:
        raise ValueError(f"{root} must hold exactly one source file besides {TRUTH_FILE}: {sources}")
    truth_path = root / TRUTH_FILE
    if not truth_path.is_file():
        raise ValueError(f"{root} has no {TRUTH_FILE}")
    return Fixture(root.name, root, sources[0], parse_truth(truth_path.read_text(encoding="utf-8")))


def parse_truth(text: str) -> tuple[Row, ...]:
    """The rows of a truth.csv text; raises ValueError naming a bad line."""
    reader = csv.reader(io.StringIO(text))
    header = tuple(cell.strip().lower() for cell in next(reader, []))
    if header != TRUTH_HEADER:
        raise ValueError(f"{TRUTH_FILE} must start with the header {','.join(TRUTH_HEADER)}")
    rows = []
    for number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != 3 or not cells[2].strip().isdigit():
            raise ValueError(f"{TRUTH_FILE} line {number}: expected method,path,line, got {cells}")
        rows.append(Row(cells[0].strip().upper(), cells[1].strip(), int(cells[2])))
    if not rows:
        raise ValueError(f"{TRUTH_FILE} holds no rows")
    return tuple(rows)


def _served(name: str) -> bool:
    return name != TRUTH_FILE and not name.startswith(".")
