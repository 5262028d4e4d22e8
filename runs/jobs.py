"""The jobs a run can be, and the parameters each accepts (validated before a run is queued)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runs.core.agent_table import load_fixture
from runs.core.agent_table.fixture import FIXTURES_DIR, fixture_dir
from runs.core.quality_data import SAMPLE_DATASET
from runs.core.replay import parse_jsonl


@dataclass(frozen=True)
class IntParam:
    """An integer parameter with an inclusive range and a default (None: take the config's)."""

    low: int
    high: int
    default: int | None

    def clean(self, name: str, value: Any) -> int | None:
        if value is None:
            return self.default
        return self.whole(name, value)

    def whole(self, name: str, value: Any) -> int:
        """`value` as a whole number in range; a missing one (None) is not a number."""
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(str(value).strip())
            except ValueError:
                raise ValueError(f"{name} must be a whole number, not {value!r}") from None
        if not self.low <= value <= self.high:
            raise ValueError(f"{name} must be between {self.low} and {self.high}, not {value}")
        return value


@dataclass(frozen=True)
class IntListParam:
    """A list of integers in an inclusive range ("0,2,4" or [0, 2, 4]), at most `most` long."""

    low: int
    high: int
    default: tuple[int, ...]
    most: int = 16

    def clean(self, name: str, value: Any) -> list[int]:
        if value is None:
            return list(self.default)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= self.most:
            raise ValueError(f"{name} must be a list of 1 to {self.most} whole numbers")
        element = IntParam(self.low, self.high, None)
        return [element.whole(f"{name} item", item) for item in items]


@dataclass(frozen=True)
class FractionListParam:
    """A list of fractions in [0, 1] ("0.1,0.5,0.9" or [0.1, 0.5, 0.9])."""

    default: tuple[float, ...]
    most: int = 11

    def clean(self, name: str, value: Any) -> list[float]:
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


@dataclass(frozen=True)
class RequestsParam:
    """Recorded request bodies to replay: a JSONL text or an already parsed list."""

    def clean(self, name: str, value: Any) -> list[dict[str, Any]]:
        if value is None:
            raise ValueError(f"{name}: a replay needs recorded requests (a JSONL file of request bodies)")
        text = value if isinstance(value, str) else "\n".join(json.dumps(v) for v in value)
        try:
            return parse_jsonl(text)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None


@dataclass(frozen=True)
class FixtureParam:
    """An agent-table fixture: a shipped fixture's name or a folder with one source file and truth.csv."""

    default: str = "routes_47"

    def clean(self, name: str, value: Any) -> str:
        value = self.default if value in (None, "") else str(value)
        inside_data_dirs(name, fixture_dir(value), also=FIXTURES_DIR)
        try:
            load_fixture(value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return value


@dataclass(frozen=True)
class ChoiceParam:
    """One of a few names."""

    choices: tuple[str, ...]

    def clean(self, name: str, value: Any) -> str:
        value = self.choices[0] if value in (None, "") else str(value).strip()
        if value not in self.choices:
            raise ValueError(f"{name} must be one of {', '.join(self.choices)}, not {value!r}")
        return value


@dataclass(frozen=True)
class DatasetParam:
    """A benchmark's local dataset: a file or folder on the worker, "sample" for the shipped subset,
    or blank for the benchmark's usual hub download."""

    def clean(self, name: str, value: Any) -> str | None:
        if value in (None, ""):
            return None
        value = str(value).strip()
        if value == SAMPLE_DATASET:
            return value
        path = inside_data_dirs(name, Path(value).expanduser())
        if not path.exists():
            raise ValueError(f"{name}: no such file or folder: {value}")
        return str(path)


def inside_data_dirs(name: str, path: Path, also: Path | None = None) -> Path:
    """`path` resolved, if it lies in one of the data folders (SPARKDASH_DATA_DIRS) or in `also`.

    A run's parameters come from a web form, and its worker reads the files they name: without
    this, anyone who can start a run could have the worker read any file on the machine.
    """
    from django.conf import settings

    resolved = path.resolve()
    roots = [Path(root).resolve() for root in settings.SPARKDASH_DATA_DIRS]
    if any(resolved.is_relative_to(root) for root in roots + ([also.resolve()] if also else [])):
        return resolved
    folders = ", ".join(str(root) for root in roots) or "none"
    raise ValueError(f"{name}: {path} is outside the data folders ({folders}; set SPARKDASH_DATA_DIRS)")


JOB_PARAMS: dict[str, dict[str, Any]] = {
    "speed": {
        "reps": IntParam(1, 50, 3),
        "warmup": IntParam(0, 5, 1),
        "max_tokens": IntParam(1, 131_072, None),
    },
    "lookahead": {
        "lengths": IntListParam(0, 64, (0, 2, 4, 8, 12)),
        "reps": IntParam(1, 50, 1),
        "warmup": IntParam(0, 5, 1),
        "max_tokens": IntParam(1, 131_072, None),
    },
    "replay": {
        "requests": RequestsParam(),
        "reps": IntParam(1, 50, 3),
        "warmup": IntParam(0, 5, 1),
    },
    "concurrency": {
        "levels": IntListParam(1, 100, (1, 2, 4, 8, 16)),
        "answer_tokens": IntParam(1, 32_768, 256),
        "reps": IntParam(1, 20, 1),
        "warmup": IntParam(0, 5, 1),
    },
    "agent-table": {
        "fixture": FixtureParam(),
        "max_steps": IntParam(1, 200, 40),
        "answer_tokens": IntParam(1, 32_768, 2048),
    },
    "needle": {
        "lengths": IntListParam(256, 1_048_576, (32_768, 65_536), most=8),
        "depths": FractionListParam((0.1, 0.5, 0.9)),
        "answer_tokens": IntParam(1, 1024, 32),
    },
    "mmlu-pro": {
        "dataset": DatasetParam(),
        "limit": IntParam(1, 20_000, None),
        "num_fewshot": IntParam(0, 5, 5),
        "max_tokens": IntParam(16, 32_768, 2048),
    },
    "evalplus": {
        "suite": ChoiceParam(("humaneval", "mbpp")),
        "dataset": DatasetParam(),
        "limit": IntParam(1, 2_000, None),
        "max_tokens": IntParam(16, 32_768, 768),
    },
    "prefix-cache": {
        "steps": IntParam(1, 200, 30),
        "bytes_per_step": IntParam(100, 1_000_000, 6000),
        "answer_tokens": IntParam(1, 1024, 16),
    },
}


def validate_params(job: str, params: dict[str, Any]) -> dict[str, Any]:
    """The job's parameters with defaults filled in; ValueError names the offending field."""
    if job not in JOB_PARAMS:
        raise ValueError(f"job must be one of {', '.join(sorted(JOB_PARAMS))}, not {job!r}")
    schema = JOB_PARAMS[job]
    unknown = sorted(set(params) - set(schema))
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} for job {job} (known: {', '.join(schema)})")
    clean = {name: spec.clean(name, params.get(name)) for name, spec in schema.items()}
    return {name: value for name, value in clean.items() if value is not None}
