"""Benchmark 5, scale: the pages with 10,000 runs and 10,000,000 samples in Postgres.

Each size lives in its own database (tests.bench.scale_data: written with COPY, reused by later
runs). A separate process (tests.bench.scale_probe) sets Django up on it and times, server side
through the test client: the home page, the run list, a run page with 10,000 samples and the
samples it loads (downsampled to at most 2,000 points, and all of them page by page as a
script reads them), a socket backfill of those 10,000 samples, and a compare of 20 runs.
The reference is the same measurement on a 200-run database, in the same run; query counts
are compared between page sizes (25 vs 100 runs listed, 5 vs 20 runs compared).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.bench.figures import figure
from tests.bench.scale_data import SIZES
from tests.bench.scale_db import database_url

GOAL_MS = 200.0
DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"
PAGES = (
    "home", "run list", "run list, last page", "run page (10,000 samples)", "run samples, downsampled",
    "compare 20 runs",
)


def run(short: bool) -> dict[str, Any]:
    """Generate or reuse the data, measure it and the 200-run reference; figures in ms and counts."""
    size = "short" if short else "full"
    result = _probe(size)
    reference = _probe("tiny")
    return {"figures": figures(result, reference), "raw": {size: result, "tiny": reference}}


def _server() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else DEFAULT_SERVER


def _probe(size: str) -> dict[str, Any]:
    name = "sparkdash_bench" if size == "full" else f"sparkdash_bench_{size}"
    url = database_url(_server(), name)
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.scale_probe", size, url],
        capture_output=True, text=True, timeout=1200, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scale probe ({size}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def figures(result: dict[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """The page timings against the 200-run database, the query counts, the data generated."""
    size = SIZES[result["size"]]
    found = [_generation(result, size)]
    for page in PAGES:
        found.append(_timing(page, result["timings"][page], reference["timings"][page], GOAL_MS))
    for name, note in EXTRAS:
        found.append(_timing(name, _timings(result, name), _timings(reference, name), None, note))
    found.append(figure("points sent for a 10,000-sample run", result["points"], "samples",
                        goal="<= 2,000", met=result["points"] <= 2000))
    found += _query_figures(result)
    return found


EXTRAS = (
    ("run samples, all pages", "every sample, 5,000 a request, as a script reads them (pages thin)"),
    ("socket backfill", "a socket's backfill of a 10,000-sample run (a page of a running run that long)"),
)
REF_NAME = f"{SIZES['tiny'].runs}-run database"


def _timings(result: dict[str, Any], name: str) -> dict[str, Any]:
    return result["timings"][name] if name in result["timings"] else result["backfill"]


def _timing(name: str, t: dict[str, Any], ref: dict[str, Any], goal: float | None, note: str = "") -> dict:
    queries = f", {t['queries']} queries ({ref['queries']} on the {REF_NAME})" if "queries" in t else ""
    return figure(
        f"{name}, server median", t["median_ms"], "ms", reference=ref["median_ms"], reference_name=REF_NAME,
        goal=f"< {goal:.0f} ms" if goal else "", met=t["median_ms"] < goal if goal else None,
        note=f"{note + '; ' if note else ''}max {t['max_ms']:.0f} ms, CPU {t['cpu_ms']:.0f} ms{queries}",
    )


def _generation(result: dict[str, Any], size: Any) -> dict[str, Any]:
    name = f"generation: {size.runs:,} runs, {size.samples:,} samples"
    generated = result["generated"]
    if generated is None:
        return figure(name, None, "s", note="reused the database a previous run filled")
    return figure(name, generated["total_s"], "s", goal="< 300 s", met=generated["total_s"] < 300,
                  note=f"runs {generated['runs_s']:.1f} s, samples {generated['samples_s']:.1f} s (COPY)")


def _query_figures(result: dict[str, Any]) -> list[dict[str, Any]]:
    lists, compares = result["list_queries"], result["compare_queries"]
    return [
        figure(f"run list queries, {lists['100']['rows']} rows", lists["100"]["queries"], "queries",
               reference=lists["25"]["queries"], reference_name=f"{lists['25']['rows']} rows",
               goal="same as with 25 rows", met=lists["100"]["queries"] == lists["25"]["queries"]),
        figure("compare queries, 20 runs", compares["20"], "queries", reference=compares["5"],
               reference_name="5 runs", goal="same as with 5 runs", met=compares["20"] == compares["5"]),
    ]
