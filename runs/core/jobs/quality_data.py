"""Local copies of the quality benchmarks' datasets: a split's rows from .parquet, .jsonl or .json."""
from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import zip_longest
from pathlib import Path
from typing import Any

SUFFIXES = (".jsonl", ".json", ".parquet")
# Larger than any benchmark file we know of (MMLU-Pro's test split is ~4 MB, the EvalPlus files
# tens of MB), small enough that a wrong path cannot make the worker read a disk image into memory.
MAX_DATASET_BYTES = 1 << 30


class DatasetError(ValueError):
    """A benchmark's dataset cannot be used as given; the message names the file, line and field."""

# The name of the small subsets shipped with SparkDash (a few questions each, in each dataset's format).
SAMPLE_DATASET = "sample"


def dataset_of(value: str | None, sample: Path) -> str | None:
    """A dataset parameter as a path: "sample" is `sample`, the job kind's shipped subset."""
    return str(sample) if value == SAMPLE_DATASET else value


def evalplus_download(suite: str) -> str:
    """EvalPlus's own copy of HumanEval+ or MBPP+ (it downloads the release file once into its cache)."""
    if suite == "humaneval":
        from evalplus.data.humaneval import _ready_human_eval_plus_path

        return _ready_human_eval_plus_path()
    from evalplus.data.mbpp import _ready_mbpp_plus_path

    return _ready_mbpp_plus_path()


def check_size(path: Path, max_bytes: int = MAX_DATASET_BYTES) -> Path:
    """`path` if it is a file of at most `max_bytes`; DatasetError naming it otherwise."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DatasetError(f"cannot read dataset file {path}: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise DatasetError(f"{path} is {size:,} bytes; a dataset file may hold at most {max_bytes:,}")
    return path


def split_files(root: Path, split: str, max_bytes: int = MAX_DATASET_BYTES) -> list[Path]:
    """The files of one split in a dataset folder (test.jsonl, data/test-00000-of-00001.parquet...)."""
    if not root.is_dir():
        raise DatasetError(f"{root}: not a folder (expected the dataset's test and validation files)")
    files = sorted(p for p in root.rglob(f"{split}*") if p.suffix in SUFFIXES and p.is_file())
    if not files:
        raise DatasetError(f"{root}: no {split} split ({split}*.jsonl, .json or .parquet)")
    return [check_size(path, max_bytes) for path in files]


def load_split(root: Path, split: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Each row of the split with where it came from ("file:line"), for error messages."""
    for path in split_files(root, split):
        if path.suffix == ".parquet":
            yield from _parquet_rows(path)
        elif path.suffix == ".json":
            yield from _json_rows(path)
        else:
            yield from _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    with path.open("rb") as lines:  # bytes: a bad byte is then one line's error, not a crash
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield _object(line, f"{path}:{number}"), f"{path}:{number}"


def _json_rows(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    rows = _object(path.read_bytes(), str(path), expect=list)
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}[{index}]: expected an object per question")
        yield row, f"{path}[{index}]"


def _parquet_rows(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    import pyarrow.parquet as pq

    for index, row in enumerate(pq.read_table(path).to_pylist()):
        yield row, f"{path} row {index}"


def _object(text: str | bytes, where: str, expect: type = dict) -> Any:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{where}: not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})") from None
    if not isinstance(value, expect):
        raise DatasetError(f"{where}: expected a JSON {'object' if expect is dict else 'array'}")
    return value


def interleave_by(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Rows taken in turn from each group (in first-seen order), so a prefix covers every group."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return [row for batch in zip_longest(*groups.values()) for row in batch if row is not None]
