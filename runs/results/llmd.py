"""A run as llm-d-benchmark's Benchmark Report, version 0.2.1 (schemas/, validated in the tests).

The report's statistics need a mean: a SparkDash run's means come from its request samples, an
imported run's from the tool's per-request values or its own stated means. A figure with no mean
known is left out (null), never written as 0. Latencies are in seconds, rates in tokens/s.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from runs.core import registry
from runs.core.typed_reads import recorded, stored
from runs.models import Run

__all__ = ["SCHEMA_VERSION", "report"]

SCHEMA_VERSION = "0.2.1"
STREAMS = "concurrency"  # requests in flight at once: a run's parameter or an imported level's

# The report's figure: (where it goes, the run's per-request key, units, from a value to the report's).
LATENCY = (("time_to_first_token", "ttft_s", "s"), ("time_per_output_token", "tpot_s", "s/token"),
           ("inter_token_latency", "itl_s", "s/token"), ("request_latency", "e2e_s", "s"))


def report(run: Run) -> dict[str, Any]:
    """The Benchmark Report of one finished run."""
    values = _request_values(run)
    latency = {name: _stats(stored(run, key), values.get(key), units) for name, key, units in LATENCY}
    total = _stats(stored(run, "total_tps"), None, "tokens/s")
    attempted = int(recorded(run, "attempted") or run.progress_total or len(values.get("ttft_s", [])))
    failures = sum(recorded(run, "failed_by_reason", {}).values())
    return {
        "version": SCHEMA_VERSION,
        "run": _run(run),
        "scenario": {"stack": [_engine(run)], "load": _load(run)},
        "results": {"request_performance": {"aggregate": {
            "requests": {"total": attempted, "failures": failures,
                         "output_length": _stats(None, values.get("output_tokens"), "count")},
            "latency": {k: v for k, v in latency.items() if v is not None},
            "throughput": {"output_token_rate": total} if total else {},
        }}},
    }


def _run(run: Run) -> dict[str, Any]:
    imported = run.provenance.get("imported_from") or {}
    revision = run.revision.number if run.revision is not None else None
    return {
        "uid": f"sparkdash-run-{run.pk}",
        "eid": f"{run.config.name} r{revision}" if revision else run.config.name,
        "time": {"start": run.started.isoformat() if run.started else None,
                 "end": run.finished.isoformat() if run.finished else None},
        "user": imported.get("by") or (run.created_by.get_username() if run.created_by else None),
        "description": f"SparkDash run {run.pk}: {run.job} on {run.machine.name}",
        "keywords": [k for k in ("sparkdash", run.job, imported.get("tool")) if k],
    }


def _engine(run: Run) -> dict[str, Any]:
    engine = run.config.engine
    version = str(run.provenance.get("engine_version") or "unknown")
    return {
        "metadata": {"label": engine.name,
                     "cfg_id": f"config-{run.config_id}-r{getattr(run.revision, 'number', 0)}"},
        "standardized": {
            "kind": "inference_engine", "tool": engine.kind, "tool_version": version, "role": "replica",
            "replicas": 1, "model": {"name": run.config.model},
            "accelerator": {"model": run.machine.name, "count": 1, "parallelism": {}},
        },
        "native": {"args": {"config": run.provenance.get("config") or {}}},
    }


def _load(run: Run) -> dict[str, Any]:
    imported = run.provenance.get("imported_from") or {}
    one_stream = 1 if registry.JOBS[run.job].sends_prompt_set else None
    concurrency = run.params.get(STREAMS) or recorded(run, STREAMS) or one_stream
    return {
        "metadata": {"description": imported.get("level") or run.job},
        "standardized": {
            "tool": imported.get("tool") or "sparkdash", "tool_version": imported.get("version") or "unknown",
            "source": "unknown", "input_seq_len": {"distribution": "other", "value": 0},
            "concurrency": concurrency,
        },
        "native": {"args": {"params": run.params, "command": imported.get("command") or None}},
    }


def _request_values(run: Run) -> dict[str, list[float]]:
    """The run's per-request values by key, from its request samples (none for an imported run)."""
    found: dict[str, list[float]] = {}
    for values in run.samples.filter(kind="request").values_list("values", flat=True):
        for key in ("ttft_s", "e2e_s", "output_tokens", "decode_tps_client"):
            if isinstance(values.get(key), int | float):
                found.setdefault(key, []).append(float(values[key]))
    found["tpot_s"] = [1 / v for v in found.get("decode_tps_client", []) if v]
    return found


def _stats(
    spread: Mapping[str, Any] | None, values: Sequence[float] | None, units: str
) -> dict[str, Any] | None:
    """Statistics from the per-request values, else from a stored spread that carries its mean."""
    if values:
        ordered = sorted(values)
        return {"units": units, "mean": statistics.fmean(ordered), "min": ordered[0], "max": ordered[-1],
                "p50": statistics.median(ordered)}
    if not isinstance(spread, Mapping) or not isinstance(spread.get("mean"), int | float):
        return None
    out = {"units": units, "mean": spread["mean"], "min": spread["min"], "max": spread["max"],
           "p50": spread["median"]}
    return out | {k: spread[k] for k in ("p90", "p99") if isinstance(spread.get(k), int | float)}
