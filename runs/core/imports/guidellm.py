"""GuideLLM's benchmarks report (report layout version 2): benchmarks.json, .yaml or .csv.

Each benchmark (one strategy: synchronous, concurrent@N, a rate) is a level. GuideLLM's
definitions (guidellm/schemas/base/request_stats.py): TTFT = first token - request start; its ITL
= (last - first token) / (output tokens - 1) per request, SparkDash's inverse decode, but its
distribution is weighted by tokens (each request counted once per token gap); its TPOT = (last
token - request start) / output tokens, so it includes the first token, and is not mapped here.
Its median is the middle value by rank (the lower of the two middle ones for an even count), so
the figures here are its own stated statistics; decode (client) is computed from its per-request
ITLs where the file lists requests.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from measure.words import gettext_noop
from runs.core.imports.levels import (
    Level,
    PeerFile,
    inverse,
    inverse_spread,
    one_value,
    spread_from_stats,
    spreads,
)

__all__ = ["is_guidellm", "is_guidellm_csv", "read_guidellm", "read_guidellm_csv"]

# Our key: (GuideLLM's metric, factor to our unit).
STATED = {"ttft_s": ("time_to_first_token_ms", 1 / 1000), "tpot_s": ("inter_token_latency_ms", 1 / 1000),
          "e2e_s": ("request_latency", 1.0)}
CSV_GROUPS = {"ttft_s": ("Time to First Token", 1 / 1000), "tpot_s": ("Inter Token Latency", 1 / 1000),
              "e2e_s": ("Request Latency", 1.0)}
NOTES = {
    "ttft_s": gettext_noop("GuideLLM's median is the middle value by rank (the lower one for an even count)"),
    "tpot_s": gettext_noop("GuideLLM's ITL: (last - first token) / (output tokens - 1), its distribution "
                           "weighted by tokens; GuideLLM's own TPOT includes the first token and is not "
                           "shown"),
    "decode_tps_client": gettext_noop("1 / GuideLLM's per-request ITL, the median over requests"),
    "total_tps": gettext_noop("GuideLLM: output tokens of the successful requests / the benchmark's "
                              "duration"),
}
STRATEGY = re.compile(r"^(synchronous|concurrent)(?:@(\d+))?")


def is_guidellm(data: Any) -> bool:
    """Its JSON or YAML report: metadata with guidellm_version, and benchmarks."""
    return (isinstance(data, Mapping) and isinstance(data.get("benchmarks"), list)
            and isinstance(data.get("metadata"), Mapping) and "guidellm_version" in data["metadata"])


def is_guidellm_csv(data: Any) -> bool:
    """Its CSV: three header rows (group, name, statistic), "Run Info" first."""
    return (isinstance(data, list) and len(data) >= 4 and isinstance(data[0], list)
            and data[0][:1] == ["Run Info"])


def read_guidellm(data: Mapping[str, Any]) -> PeerFile:
    levels = [_level(b) for b in data["benchmarks"]]
    backend = ((data.get("config") or {}).get("spec") or {}).get("backend") or {}
    return PeerFile(tool="guidellm", version=str(data["metadata"]["guidellm_version"]), command="",
                    model=str(backend.get("model", "")), levels=levels,
                    base_url=str(backend.get("target", "")), backend=str(backend.get("kind", "")))


def _level(bench: Mapping[str, Any]) -> Level:
    metrics, strategy = bench["metrics"], bench["config"]["strategy"]
    figures: dict[str, Any] = {}
    for key, (name, factor) in STATED.items():
        stats = (metrics.get(name) or {}).get("successful") or {}
        if stats.get("count"):
            figures[key] = spread_from_stats(stats["median"], stats["min"], stats["max"], stats["count"],
                                             factor, stats["mean"])
    requests = bench.get("requests") or {}
    decode = [inverse(r.get("inter_token_latency_ms")) for r in requests.get("successful") or []]
    figures |= spreads(({"decode_tps_client": 1000 * v} for v in decode if v), ("decode_tps_client",))
    tokens = ((metrics.get("output_token_count") or {}).get("successful") or {}).get("total_sum")
    if tokens and bench.get("duration"):
        figures["total_tps"] = one_value(tokens / bench["duration"])
    failed = Counter(_reason(r) for r in requests.get("errored") or [])
    failed.update({"incomplete": len(requests.get("incomplete") or [])} if requests.get("incomplete") else {})
    totals = metrics.get("request_totals") or {}
    streams = strategy.get("streams") or strategy.get("max_concurrency")
    strategy_type = strategy.get("type_", "")
    concurrency = 1 if strategy_type == "synchronous" else streams if strategy_type == "concurrent" else None
    label = f"{strategy_type}@{streams}" if strategy_type == "concurrent" else strategy_type
    return Level(label=label, concurrency=concurrency,
                 figures=figures, stated={k: v["median"] for k, v in figures.items() if k in STATED},
                 attempted=int(totals.get("total") or 0), failed_by_reason=dict(failed),
                 notes={k: v for k, v in NOTES.items() if k in figures}, started=None)


def _reason(request: Mapping[str, Any]) -> str:
    info = request.get("info") or {}
    error = info.get("error") or request.get("error") or "errored"
    return str(error).strip().splitlines()[-1][:120] if str(error).strip() else "errored"


def read_guidellm_csv(rows: Sequence[Sequence[str]]) -> PeerFile:
    """The CSV's columns by (group, statistic); its percentiles' ends are the range."""
    groups, names, stats = rows[0], rows[1], rows[2]
    levels = []
    for row in rows[3:]:
        cells = {(g, n, s): v for g, n, s, v in zip(groups, names, stats, row, strict=False)}
        levels.append(_csv_level(cells))
    return PeerFile(tool="guidellm", version="", command="", model="", levels=levels)


def _csv_level(cells: Mapping[tuple[str, str, str], str]) -> Level:
    by_group = {(g, s): v for (g, n, s), v in cells.items() if n.startswith("Successful") or not s}
    figures: dict[str, Any] = {}
    count = int(float(cells.get(("Request Counts", "Successful", ""), "0") or 0))
    for key, (group, factor) in CSV_GROUPS.items():
        median, mean = by_group.get((group, "Median")), by_group.get((group, "Mean"))
        percentiles = json.loads(by_group.get((group, "Percentiles")) or "[]")
        if median and mean and percentiles:
            figures[key] = spread_from_stats(float(median), percentiles[0], percentiles[-1], count, factor,
                                             float(mean))
    if "tpot_s" in figures:
        figures["decode_tps_client"] = inverse_spread(figures["tpot_s"])
    strategy = cells.get(("Benchmark", "Strategy", ""), "")
    found = STRATEGY.match(strategy)
    concurrency = None
    if found:
        concurrency = 1 if found.group(1) == "synchronous" else int(found.group(2) or 0) or None
    notes = {k: v for k, v in NOTES.items() if k in figures}
    if "decode_tps_client" in figures:
        notes["decode_tps_client"] = gettext_noop("1 / GuideLLM's median ITL (its CSV lists no requests)")
    errored = int(float(cells.get(("Request Counts", "Errored", ""), "0") or 0))
    return Level(label=strategy, concurrency=concurrency, figures=figures,
                 stated={k: v["median"] for k, v in figures.items() if k in CSV_GROUPS},
                 attempted=int(float(cells.get(("Request Counts", "Total", ""), "0") or 0)),
                 failed_by_reason={"errored": errored} if errored else {}, notes=notes)
