"""Benchmark 4, live latency: from the worker having a sample to a browser's chart having drawn it.

tests.bench.live_probe (its own process: Django on the sparkdash_bench_live database and
channels-redis on Redis db 11, daphne via `manage.py serve`) runs a speed job against the
simulator with 20 run pages open in headless Chromium (5 windows per browser) for 5 minutes. The worker stamps
each sample with its wall clock (time.time()) as the job hands it over; each page notes
performance.timeOrigin + performance.now() once its chart has drawn the point. The reference
is the same measurement with one page open, in the same run. Short mode: 2 pages for 10 s.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.bench.figures import figure
from tests.bench.scale import DEFAULT_SERVER
from tests.bench.scale_db import database_url

GOAL_MS = 200.0
REDIS_DB = 11  # apart from the suite's and the dashboard's groups (run-<id> names repeat across databases)
# (pages, seconds[, bare socket clients]): the reference, the goal's case, then sockets and no browser.
FULL = [(1, 30), (20, 300), (0, 60, 20)]
SHORT = [(1, 5), (2, 10), (0, 5, 2)]


def run(short: bool) -> dict[str, Any]:
    """Measure 1 page (reference) then many; figures in ms and points."""
    plan = SHORT if short else FULL
    found = _probe(plan)
    reference, watched, sockets_only = found["results"]
    return {"figures": figures(watched, reference) + socket_figures(sockets_only, reference), "raw": found}


def _env() -> dict[str, str]:
    server = os.environ.get("DATABASE_URL", "")
    server = server if server.startswith(("postgres://", "postgresql://")) else DEFAULT_SERVER
    redis = urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    return {
        "DATABASE_URL": database_url(server, "sparkdash_bench_live"),
        "REDIS_URL": urlunsplit(redis._replace(path=f"/{REDIS_DB}")),
        "SPARKDASH_WORKER": "inprocess", "DEBUG": "False", "SECRET_KEY": "bench-only",
        "SECURE_SSL_REDIRECT": "False", "SECURE_COOKIES": "False", "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "sparkdash.settings", "CONN_MAX_AGE": "60",
    }


def _probe(plan: list[tuple[int, ...]]) -> dict[str, Any]:
    env = _env()
    args = [sys.executable, "-m", "tests.bench.live_probe", json.dumps({"env": env, "runs": plan})]
    timeout = sum(entry[1] for entry in plan) + 300
    done = subprocess.run(
        args, env=os.environ | env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"live probe failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def latencies(result: dict[str, Any], until: int = 3) -> list[float]:
    """Every page's drawn (until=3) or received (until=2) minus sent, in ms, over its points."""
    return [row[until] - row[1] for page in result["drawn"] for row in page]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def figures(watched: dict[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """p50, p95, p99 and max with many pages against one page; points missed."""
    ms, ref = latencies(watched), latencies(reference)
    if not ms or not ref:
        raise RuntimeError(f"no points drawn ({len(ms)} with {watched['pages']} pages, {len(ref)} with one)")
    ref_name = f"1 page, {reference['seconds']} s"
    name = f"{watched['pages']} pages, {watched['seconds']} s"
    found = []
    for q in (50, 95, 99, 100):
        value, goal = percentile(ms, q), q == 95
        found.append(figure(
            f"live latency {'max' if q == 100 else f'p{q}'}, {name}", value, "ms",
            reference=percentile(ref, q), reference_name=ref_name,
            goal=f"< {GOAL_MS:.0f} ms" if goal else "", met=value < GOAL_MS if goal else None,
            note=f"{len(ms)} points ({watched['samples']} samples x {watched['pages']} pages)" * goal,
        ))
    found += _where_figures(watched, reference, name, ref_name)
    missed = watched["samples"] * watched["pages"] - len(ms)
    found.append(figure(f"points not drawn, {name}", missed, "points", goal="0", met=missed == 0,
                        note=f"run ended {watched['status']}; drawn per page: {_per_page(watched)}"))
    return found


def _where_figures(
    watched: dict[str, Any], reference: dict[str, Any], name: str, ref_name: str
) -> list[dict[str, Any]]:
    """Where the latency comes from: arrival in the page, the server's part, the pages' work, the cores."""
    got, got_ref = latencies(watched, until=2), latencies(reference, until=2)
    socket, socket_ref = _socket_ms(watched), _socket_ms(reference)
    return [
        figure(f"received p95 (message reached the page's script), {name}", percentile(got, 95), "ms",
               reference=percentile(got_ref, 95), reference_name=ref_name,
               note="when the page's script got the message (waits for a busy page); the rest is drawing"),
        figure(f"socket client p95 (a websocket client that draws nothing), {name}", percentile(socket, 95),
               "ms", reference=percentile(socket_ref, 95), reference_name=ref_name,
               note=f"the server's part on the same loaded box; {len(socket)} deliveries"),
        *_main_thread_figures(watched, reference, name, ref_name),
        figure(f"cores used during the run, {name}", sum(watched["cores"].values()), "cores",
               reference=sum(reference["cores"].values()), reference_name=ref_name,
               note="by process (/proc): " + _by_kind(watched["cores"])),
    ]


def socket_figures(sockets_only: dict[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """The server alone: bare socket clients and no browser, against the one-page run's socket client."""
    ms, n = _socket_ms(sockets_only), len(sockets_only["socket"])
    return [figure(
        f"socket clients only p95 ({n} clients, no browser), {sockets_only['seconds']} s", percentile(ms, 95),
        "ms", reference=percentile(_socket_ms(reference), 95), reference_name="1 page's socket client",
        goal=f"< {GOAL_MS:.0f} ms", met=percentile(ms, 95) < GOAL_MS,
        note=f"{len(ms)} deliveries; p50 {percentile(ms, 50):.1f} ms, max {max(ms):.1f} ms;"
        f" cores by process: {_by_kind(sockets_only['cores'])}",
    )]


def _socket_ms(result: dict[str, Any]) -> list[float]:
    ms = [received - sent for client in result["socket"] for _, sent, received in client]
    if not ms:
        raise RuntimeError("no bare socket client received a sample")
    return ms


def _main_thread_figures(
    watched: dict[str, Any], reference: dict[str, Any], name: str, ref_name: str
) -> list[dict[str, Any]]:
    """Where a page's main thread went, per point drawn (Chromium's own accounting), and how busy it was."""
    def per_point(result: dict[str, Any], key: str) -> float:
        points = sum(len(page) for page in result["drawn"])
        return 1000 * sum(page[key] for page in result["main_thread_s"]) / max(points, 1)

    found = []
    for key, what in (("TaskDuration", "all tasks"), ("ScriptDuration", "script"),
                      ("LayoutDuration", "layout"), ("RecalcStyleDuration", "style recalc")):
        found.append(figure(f"page main thread per point drawn, {what}, {name}", per_point(watched, key),
                            "ms", reference=per_point(reference, key), reference_name=ref_name))
    busy = sum(page["TaskDuration"] for page in watched["main_thread_s"]) / watched["seconds"]
    found[0]["note"] = (
        "DevTools Performance.getMetrics: wall time of the pages' main-thread tasks, so waiting for a core"
        f" counts too ({busy:.1f} s per second over {watched['pages']} pages); raster and compositing are not"
        " in it"
    )
    return found


def _by_kind(cores: dict[str, float]) -> str:
    ranked = sorted(cores.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{kind} {used:.2f}" for kind, used in ranked if used >= 0.005)


def _per_page(result: dict[str, Any]) -> str:
    counts = sorted(len(page) for page in result["drawn"])
    return f"{counts[0]}..{counts[-1]}"
