"""NVIDIA AIPerf's profile exports: profile_export_aiperf.json and profile_export_aiperf.csv.

One file is one profile (one level). AIPerf's definitions: TTFT = first chunk with content -
request start; its inter-token latency = (request latency - TTFT) / (output tokens - 1) per
request (SparkDash's TPOT); its inter-chunk latency = every gap between chunks (SparkDash's ITL);
output token throughput per user = 1 / that inter-token latency (SparkDash's decode); output
tokens are counted by AIPerf's own tokenizer unless told to use the server's usage. It states p50
(numpy's interpolated median), which is the median here. Its CSV has neither its version nor the
load; its JSON has both, and the command line.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from measure.words import gettext_noop
from runs.core.imports.levels import Level, PeerFile, one_value, spread_from_stats

__all__ = ["is_aiperf", "is_aiperf_csv", "read_aiperf", "read_aiperf_csv"]

# Our key: (AIPerf's metric in JSON, its row name in the CSV, factor to our unit).
FIGURES = {
    "ttft_s": ("time_to_first_token", "Time to First Token (ms)", 1 / 1000),
    "tpot_s": ("inter_token_latency", "Inter Token Latency (ms)", 1 / 1000),
    "itl_s": ("inter_chunk_latency", "Inter Chunk Latency (ms)", 1 / 1000),
    "decode_tps_client": ("output_token_throughput_per_user",
                          "Output Token Throughput Per User (tokens/sec/user)", 1.0),
    "e2e_s": ("request_latency", "Request Latency (ms)", 1 / 1000),
}
NOTES = {
    "ttft_s": gettext_noop("AIPerf's clock: request start to the first chunk with content"),
    "tpot_s": gettext_noop("AIPerf's inter-token latency: (latency - TTFT) / (output tokens - 1); output "
                           "tokens by AIPerf's own tokenizer unless it was told to use the server's usage"),
    "itl_s": gettext_noop("AIPerf's inter-chunk latency: every gap between chunks, over all requests"),
    "decode_tps_client": gettext_noop("AIPerf's output token throughput per user: 1 / its inter-token "
                                      "latency"),
    "total_tps": gettext_noop("AIPerf's output token throughput: output tokens / the benchmark's duration"),
}


def is_aiperf(data: Any) -> bool:
    return isinstance(data, Mapping) and "aiperf_version" in data and "time_to_first_token" in data


def is_aiperf_csv(data: Any) -> bool:
    return (isinstance(data, list) and bool(data) and isinstance(data[0], list)
            and data[0][:2] == ["Metric", "avg"] and "p50" in data[0])


def read_aiperf(data: Mapping[str, Any]) -> PeerFile:
    figures: dict[str, Any] = {}
    for key, (name, _row, factor) in FIGURES.items():
        stats = data.get(name)
        if isinstance(stats, Mapping) and isinstance(stats.get("p50"), int | float):
            figures[key] = spread_from_stats(stats["p50"], stats["min"], stats["max"], stats.get("count"),
                                             factor, stats["avg"])
    if total := one_value((data.get("output_token_throughput") or {}).get("avg")):
        figures["total_tps"] = total
    phase: Mapping[str, Any] = next(iter((data.get("input_config") or {}).get("phases") or []), {})
    concurrency = phase.get("concurrency") if phase.get("type") == "concurrency" else None
    errors = {str((e.get("error_details") or {}).get("message") or e.get("error_details") or "error")[:120]:
              int(e.get("count", 1)) for e in data.get("error_summary") or []}
    level = Level(label=f"concurrency {concurrency}" if concurrency else "profile", concurrency=concurrency,
                  figures=figures, stated={k: v["median"] for k, v in figures.items() if k in FIGURES},
                  attempted=int((data.get("request_count") or {}).get("avg") or 0),
                  failed_by_reason=errors, notes={k: v for k, v in NOTES.items() if k in figures},
                  started=str(data.get("start_time") or "") or None)
    models = ((data.get("input_config") or {}).get("models") or {}).get("items") or [{}]
    return PeerFile(tool="aiperf", version=str(data["aiperf_version"]),
                    command=str((data.get("run_info") or {}).get("cli_command", "")),
                    model=str(models[0].get("name", "")), levels=[level])


def read_aiperf_csv(rows: Sequence[Sequence[str]]) -> PeerFile:
    header = list(rows[0])
    table = {row[0]: dict(zip(header, row, strict=False)) for row in rows[1:] if row and len(row) > 2}
    values = {row[0]: row[1] for row in rows[1:] if len(row) == 2}
    figures: dict[str, Any] = {}
    for key, (_name, label, factor) in FIGURES.items():
        row = table.get(label)
        if row and row.get("p50"):
            low, high = float(row["min"]), float(row["max"])
            figures[key] = spread_from_stats(float(row["p50"]), low, high, None, factor, float(row["avg"]))
    if total := one_value(float(values["Output Token Throughput (tokens/sec)"])
                          if values.get("Output Token Throughput (tokens/sec)") else None):
        figures["total_tps"] = total
    attempted = int(float(values.get("Request Count") or 0))
    rate = float(values.get("Request Error Rate (%)") or 0)
    failed = round(attempted * rate / 100)
    level = Level(label="profile", concurrency=None, figures=figures,
                  stated={k: v["median"] for k, v in figures.items() if k in FIGURES}, attempted=attempted,
                  failed_by_reason={"error": failed} if failed else {},
                  notes={k: v for k, v in NOTES.items() if k in figures})
    return PeerFile(tool="aiperf", version="", command="", model="", levels=[level])

