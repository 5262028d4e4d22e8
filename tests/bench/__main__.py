"""Run the benchmarks: `python -m tests.bench [--short] [--only fidelity,overhead] [--skip vllm_agreement]
[--out var/bench.json]`.

Prints one table of every figure (value, same-run reference, ratio, goal, met) and writes all
of them to a JSON file. Exits 1 when a benchmark crashed; a missed goal is a figure, not a failure.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.bench import BENCHMARKS
from tests.bench.figures import figure


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks, print the table, write the JSON; 1 if any crashed."""
    args = _parser().parse_args(argv)
    names = _chosen(args.only, args.skip)
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(),
        "short": args.short,
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(), "node": platform.node()},
        "benchmarks": {},
    }
    crashed = False
    for name in names:
        print(f"== {name}{' (short)' if args.short else ''}", flush=True)
        result = _run_one(name, args.short)
        crashed |= "error" in result
        report["benchmarks"][name] = result
        print_table(result["figures"])
        print(f"  ({result['seconds']} s, load average {result['load_avg'][0]} -> {result['load_avg'][1]})")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"figures written to {args.out}")
    return 1 if crashed else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    parser.add_argument("--short", action="store_true", help="a tiny version of each, goals not enforced")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    parser.add_argument("--skip", default="", help="comma-separated benchmarks to leave out")
    parser.add_argument("--out", default="var/bench.json", help="where to write the figures (JSON)")
    return parser


def _chosen(only: str, skip: str = "") -> list[str]:
    names, left_out = _names(only) or list(BENCHMARKS), _names(skip)
    unknown = sorted((set(names) | set(left_out)) - set(BENCHMARKS))
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    return [name for name in names if name not in left_out]


def _names(listed: str) -> list[str]:
    return [n.strip() for n in listed.split(",") if n.strip()]


def _run_one(name: str, short: bool) -> dict[str, Any]:
    """One benchmark's result, timed; a crash becomes an "error" entry so the others still run."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    try:
        result = dict(importlib.import_module(f"tests.bench.{name}").run(short))
    except Exception as exc:  # a crashed benchmark is reported, the rest go on
        traceback.print_exc()
        reason = f"{type(exc).__name__}: {exc}"
        result = {"figures": [figure(f"{name} crashed", None, "", note=reason)], "error": reason}
    result["seconds"] = round(time.perf_counter() - started, 1)
    # The box's 1-minute load average before and after: what the figures were measured under.
    result["load_avg"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    return result


COLUMNS = ("figure", "value", "unit", "reference", "ratio", "goal", "met")


def print_table(figures: list[dict[str, Any]]) -> None:
    """Figures as aligned text columns; notes (e.g. why a figure is missing) under their row."""
    rows = [COLUMNS] + [_cells(f) for f in figures]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    for f in figures:
        if f.get("note"):
            print(f"  * {f['name']}: {f['note']}")
    sys.stdout.flush()


def _cells(f: dict[str, Any]) -> tuple[str, ...]:
    ref = _num(f["reference"])
    if f["reference"] is not None and f.get("reference_name"):
        ref = f"{ref} ({f['reference_name']})"
    met = {True: "yes", False: "NO", None: "-"}[f["met"]]
    ratio = f"{f['ratio']:.3g}" if f["ratio"] is not None else "-"
    return (f["name"], _num(f["value"]), f["unit"], ref, ratio, f["goal"] or "-", met)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


if __name__ == "__main__":
    sys.exit(main())
