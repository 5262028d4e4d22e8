"""A job's parameters: each checks a value from a form, a script or a sweep, and says its range.

`clean(name, value, data_dirs)` returns the value to store (None: take the config's) or raises
ValueError naming the field. `data_dirs` are the folders a run may read files from
(SPARKDASH_DATA_DIRS): the worker reads the files a parameter names, so nothing outside them.
Plain Python, no Django.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runs.core.jobs.agent_table import load_fixture
from runs.core.jobs.agent_table.fixture import FIXTURES_DIR, fixture_dir
from runs.core.jobs.quality_data import SAMPLE_DATASET
from runs.core.jobs.replay import parse_jsonl

__all__ = [
    "ChoiceParam", "DatasetParam", "FixtureParam", "FractionListParam", "IntListParam", "IntParam",
    "Param", "RequestsParam", "inside_data_dirs",
]

DataDirs = Sequence[Path | str]
EN_DASH = "\u2013"


@dataclass(frozen=True)
class IntParam:
    """An integer parameter with an inclusive range and a default (None: take the config's)."""

    label: str
    low: int
    high: int
    default: int | None

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> int | None:
        if value is None:
            return self.default
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(str(value).strip())
            except ValueError:
                raise ValueError(f"{name} must be a whole number, not {value!r}") from None
        if not self.low <= value <= self.high:
            raise ValueError(f"{name} must be between {self.low} and {self.high}, not {value}")
        return value

    def clean_whole(self, name: str, value: Any) -> int:
        """One whole number in range (a list's item: never the default)."""
        clean = self.clean(name, value)
        if clean is None:
            raise ValueError(f"{name} must be a whole number, not {value!r}")
        return clean

    def help(self) -> str:
        default = "the config's" if self.default is None else self.default
        return f"{self.low}{EN_DASH}{self.high}, default {default}"


@dataclass(frozen=True)
class IntListParam:
    """A list of integers in an inclusive range ("0,2,4" or [0, 2, 4]), at most `most` long."""

    label: str
    low: int
    high: int
    default: tuple[int, ...]
    most: int = 16

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> list[int]:
        if value is None:
            return list(self.default)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= self.most:
            raise ValueError(f"{name} must be a list of 1 to {self.most} whole numbers")
        element = IntParam(self.label, self.low, self.high, None)
        return [element.clean_whole(f"{name} item", item) for item in items]

    def help(self) -> str:
        default = ",".join(str(v) for v in self.default)
        return f"comma-separated, each {self.low}{EN_DASH}{self.high}, default {default}"


@dataclass(frozen=True)
class FractionListParam:
    """A list of fractions in [0, 1] ("0.1,0.5,0.9" or [0.1, 0.5, 0.9])."""

    label: str
    default: tuple[float, ...]
    most: int = 11

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> list[float]:
        if value is None:
            return list(self.default)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= self.most:
            raise ValueError(f"{name} must be a list of 1 to {self.most} fractions")
        try:
            fractions = [float(str(item).strip()) for item in items]
        except ValueError:
            raise ValueError(f"{name} must be fractions between 0 and 1, e.g. 0.1,0.5,0.9") from None
        if any(not 0 <= f <= 1 for f in fractions):
            raise ValueError(f"{name} must be fractions between 0 and 1, not {fractions}")
        return fractions

    def help(self) -> str:
        return f"comma-separated fractions 0{EN_DASH}1, default {','.join(str(v) for v in self.default)}"


@dataclass(frozen=True)
class RequestsParam:
    """Recorded request bodies to replay: a JSONL text or an already parsed list."""

    label: str

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> list[dict[str, Any]]:
        if value is None:
            raise ValueError(f"{name}: a replay needs recorded requests (a JSONL file of request bodies)")
        text = value if isinstance(value, str) else "\n".join(json.dumps(v) for v in value)
        try:
            return parse_jsonl(text)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    def help(self) -> str:
        return "a JSON Lines file of recorded chat request bodies, one a line, up to 5 MB"


@dataclass(frozen=True)
class FixtureParam:
    """An agent-table fixture: a shipped fixture's name or a folder with one source file and truth.csv."""

    label: str
    default: str = "routes_47"

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> str:
        value = self.default if value in (None, "") else str(value)
        inside_data_dirs(name, fixture_dir(value), data_dirs, also=FIXTURES_DIR)
        try:
            load_fixture(value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return value

    def help(self) -> str:
        shipped = "a shipped fixture (routes_47, routes_12)"
        return f"{shipped} or a folder with one source file and truth.csv; default {self.default}"


@dataclass(frozen=True)
class ChoiceParam:
    """One of a few names (the first is the default), each with the label a form shows."""

    label: str
    choices: tuple[tuple[str, str], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.choices)

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> str:
        value = self.names[0] if value in (None, "") else str(value).strip()
        if value not in self.names:
            raise ValueError(f"{name} must be one of {', '.join(self.names)}, not {value!r}")
        return value

    def help(self) -> str:
        return f"{' or '.join(self.names)}, default {self.names[0]}"


@dataclass(frozen=True)
class DatasetParam:
    """A benchmark's local dataset: a file or folder on the worker, "sample" for the shipped subset,
    or blank for the benchmark's usual hub download."""

    label: str

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> str | None:
        if value in (None, ""):
            return None
        value = str(value).strip()
        if value == SAMPLE_DATASET:
            return value
        path = inside_data_dirs(name, Path(value).expanduser(), data_dirs)
        if not path.exists():
            raise ValueError(f"{name}: no such file or folder: {value}")
        return str(path)

    def help(self) -> str:
        return ("a file or folder on the worker in the dataset's own format, sample (a few shipped "
                "questions), or blank to download it")


Param = (
    IntParam | IntListParam | FractionListParam | RequestsParam | FixtureParam | ChoiceParam | DatasetParam
)


def inside_data_dirs(name: str, path: Path, data_dirs: DataDirs, also: Path | None = None) -> Path:
    """`path` resolved, if it lies in one of `data_dirs` or in `also`; else ValueError naming the field.

    A run's parameters come from a web form, and its worker reads the files they name: without
    this, anyone who can start a run could have the worker read any file on the machine.
    """
    resolved = path.resolve()
    roots = [Path(root).resolve() for root in data_dirs]
    if any(resolved.is_relative_to(root) for root in roots + ([also.resolve()] if also else [])):
        return resolved
    folders = ", ".join(str(root) for root in roots) or "none"
    raise ValueError(f"{name}: {path} is outside the data folders ({folders}; set SPARKDASH_DATA_DIRS)")
