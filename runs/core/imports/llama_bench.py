"""llama.cpp's `llama-bench -o json | jsonl | csv | md`: one level per test row (pp512, tg128...).

llama-bench runs the model in its own process, no server and no HTTP: a "tg" test is generation
speed at batch 1 (the engine's own decode figure), a "pp" test prompt processing. It states the
mean over its repetitions (avg_ts, with stddev_ts) and, in JSON and CSV, each repetition's figure
(samples_ts): the median here is over those; the Markdown table has only mean +/- stddev.
"""
from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from measure.words import gettext_noop
from runs.core.imports.levels import Level, PeerFile, spread_from_stats

__all__ = ["is_llama_bench", "is_llama_bench_rows", "read_llama_bench"]

MEAN_NOTE = gettext_noop("llama-bench runs the model in-process (no server); it states the mean over "
                         "repetitions, the median here is over its per-repetition figures")
MD_NOTE = gettext_noop("llama-bench's Markdown table gives only the mean +/- stddev over repetitions, shown "
                       "here as the figure")
MD_TEST = re.compile(r"^(pp|tg)(\d+)(?: @ d(\d+))?$")


def is_llama_bench(data: Any) -> bool:
    """JSON or JSON lines: objects with llama-bench's build and timing fields."""
    return isinstance(data, list) and bool(data) and all(
        isinstance(r, Mapping) and "avg_ts" in r and "n_gen" in r and "build_commit" in r for r in data)


def is_llama_bench_rows(data: Any) -> bool:
    """The Markdown table: a "test" column (pp512, tg128) and a "t/s" column."""
    return isinstance(data, list) and bool(data) and all(
        isinstance(r, Mapping) and "test" in r and "t/s" in r and "params" in r for r in data)


def read_llama_bench(data: Sequence[Mapping[str, Any]]) -> PeerFile:
    if is_llama_bench_rows(data):
        levels = [_md_level(row) for row in data]
        return PeerFile(tool="llama-bench", version="", command="", model=str(data[0].get("model", "")),
                        levels=levels, backend=str(data[0].get("backend", "")))
    first = data[0]
    version = f"{first.get('build_number', '')} ({first.get('build_commit', '')})".strip()
    return PeerFile(tool="llama-bench", version=version, command="",
                    model=str(first.get("model_filename", "")), levels=[_level(row) for row in data],
                    backend=str(first.get("backends", "")))


def _level(row: Mapping[str, Any]) -> Level:
    n_prompt, n_gen = int(row.get("n_prompt") or 0), int(row.get("n_gen") or 0)
    key = "decode_tps_engine" if n_gen else "prefill_tps"
    samples = row.get("samples_ts")
    if isinstance(samples, str):  # the CSV writes the list as text
        samples = json.loads(samples) if samples.startswith("[") else [float(v) for v in samples.split()]
    values = [float(v) for v in samples or []] or [float(row["avg_ts"])]
    spread = {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
              "mean": float(row["avg_ts"])}
    test = f"tg{n_gen}" if n_gen else f"pp{n_prompt}"
    depth = int(row.get("n_depth") or 0)
    return Level(label=test + (f" @ d{depth}" if depth else ""), concurrency=1, figures={key: spread},
                 stated={f"{key}_mean": float(row["avg_ts"])}, attempted=len(values), notes={key: MEAN_NOTE},
                 started=str(row.get("test_time") or "") or None)


def _md_level(row: Mapping[str, Any]) -> Level:
    test = str(row["test"]).strip()
    found = MD_TEST.match(test)
    if not found:
        raise ValueError(f"test {test!r} is not ppN or tgN")
    key = "decode_tps_engine" if found.group(1) == "tg" else "prefill_tps"
    mean = float(str(row["t/s"]).split("±")[0])
    spread = spread_from_stats(mean, mean, mean, 0, mean=mean)
    return Level(label=test, concurrency=1, figures={key: spread}, stated={f"{key}_mean": mean},
                 notes={key: MD_NOTE})
