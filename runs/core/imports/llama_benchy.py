"""llama-benchy's `--format json` report: one level per benchmark (prompt, response, depth, concurrency).

llama-benchy (llama-bench's tests against an OpenAI-compatible server) keeps each figure's raw
values beside its mean and stddev. Its definitions: e2e_ttft = first token's arrival - request
start (SparkDash's TTFT); per-request generation speed = tokens after the first token's chunk /
(last - first token time), SparkDash's decode (client); prompt speed = prompt tokens / (time to
first response - the network latency it measured or assumed), an estimate; "total" generation
throughput runs from the first request's first token to the last token, not from the first send.
It states means, not medians.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from measure.words import gettext_noop
from runs.core.imports.levels import Level, PeerFile, spreads

__all__ = ["is_llama_benchy", "is_llama_benchy_table", "read_llama_benchy", "read_llama_benchy_table"]

# Our key: (llama-benchy's metric, factor to our unit).
FIGURES = {"ttft_s": ("e2e_ttft", 1 / 1000), "decode_tps_client": ("tg_req_throughput", 1.0),
           "prefill_tps": ("pp_req_throughput", 1.0), "total_tps": ("tg_throughput", 1.0)}
NOTES = {
    "ttft_s": gettext_noop("llama-benchy's e2e_ttft; it states the mean, the median here is over its values"),
    "decode_tps_client": gettext_noop("llama-benchy's per-request generation speed; it states the mean"),
    "prefill_tps": gettext_noop("llama-benchy's estimate: prompt tokens / (first response - its measured "
                                "network latency)"),
    "total_tps": gettext_noop("llama-benchy's total: from the first token of any request to the last token, "
                              "so prefill is left out"),
}


def is_llama_benchy(data: Any) -> bool:
    """Its JSON report: the tool's metadata (latency_mode) and a list of benchmarks."""
    return isinstance(data, Mapping) and "latency_mode" in data and isinstance(data.get("benchmarks"), list)


def read_llama_benchy(data: Mapping[str, Any]) -> PeerFile:
    levels = [_level(run, data) for run in data["benchmarks"]]
    return PeerFile(tool="llama-benchy", version=str(data.get("version", "")), command="",
                    model=str(data.get("model", "")), levels=levels)


def _level(run: Mapping[str, Any], data: Mapping[str, Any]) -> Level:
    figures: dict[str, Any] = {}
    stated: dict[str, float] = {}
    for key, (name, factor) in FIGURES.items():
        metric = run.get(name)
        if not isinstance(metric, Mapping) or not metric.get("values"):
            continue
        figures |= spreads(({key: v * factor} for v in metric["values"]), (key,))
        stated[f"{key}_mean"] = float(metric["mean"]) * factor
    depth = int(run.get("context_size") or 0)
    label = f"pp{run['prompt_size']} tg{run['response_size']}" + (f" @ d{depth}" if depth else "")
    concurrency = int(run["concurrency"])
    attempted = len((run.get("e2e_ttft") or {}).get("values") or [])
    return Level(label=f"{label} c{concurrency}", concurrency=concurrency, figures=figures, stated=stated,
                 attempted=attempted, notes={k: v for k, v in NOTES.items() if k in figures},
                 started=str(data.get("timestamp") or "") or None)


TABLE_NOTE = gettext_noop("llama-benchy's CSV and Markdown give only the mean +/- stddev: the mean is shown "
                          "as the figure")
TEST = re.compile(r"^(pp|tg)(\d+)(?: @ d(\d+))?(?: \(c(\d+)\))?$")
# (our key, the test row it is on, its columns in the CSV and the Markdown by preference, factor)
TABLE = (("ttft_s", "pp", ("e2e_ttft_mean", "e2e_ttft (ms)"), 1 / 1000),
         ("prefill_tps", "pp", ("t_s_req_mean", "t/s (req)", "t/s"), 1.0),
         ("decode_tps_client", "tg", ("t_s_req_mean", "t/s (req)", "t/s"), 1.0),
         ("total_tps", "tg", ("t_s_mean", "t/s (total)", "t/s"), 1.0))


def is_llama_benchy_table(data: Any) -> bool:
    """Its CSV (test_name, t_s_mean...) or Markdown table (test, e2e_ttft (ms)...) as records."""
    return isinstance(data, list) and bool(data) and all(
        isinstance(r, Mapping) and ("e2e_ttft_mean" in r or "e2e_ttft (ms)" in r) for r in data)


def read_llama_benchy_table(rows: list[Mapping[str, str]]) -> PeerFile:
    """One level per concurrency, from its pp row (TTFT, prompt speed) and tg row (decode, total)."""
    by_level: dict[int, dict[str, Mapping[str, str]]] = {}
    names: dict[int, list[str]] = {}
    for row in rows:
        test = str(row.get("test_name") or row.get("test") or "").strip()
        found = TEST.match(test)
        if not found:
            raise ValueError(f"test {test!r} is not ppN or tgN")
        concurrency = int(found.group(4) or 1)
        by_level.setdefault(concurrency, {})[found.group(1)] = row
        names.setdefault(concurrency, []).append(test.split(" (c")[0])
    levels = [_table_level(f"{' '.join(names[c])} c{c}", c, tests) for c, tests in sorted(by_level.items())]
    return PeerFile(tool="llama-benchy", version="", command="", model=str(rows[0].get("model", "")),
                    levels=levels)


def _table_level(label: str, concurrency: int, tests: Mapping[str, Mapping[str, str]]) -> Level:
    figures: dict[str, Any] = {}
    for key, test, columns, factor in TABLE:
        row = tests.get(test) or {}
        cell = next((str(row[c]) for c in columns if c in row), "").split("±")[0].strip()
        if cell:
            mean = float(cell) * factor
            figures[key] = {"median": mean, "min": mean, "max": mean, "n": 0, "mean": mean}
    return Level(label=label, concurrency=concurrency, figures=figures,
                 stated={f"{k}_mean": v["mean"] for k, v in figures.items()},
                 notes={k: TABLE_NOTE for k in figures})
