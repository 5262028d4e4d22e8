"""Benchmark 9, worker_threads: where a user's run spends its CPU while it streams, thread by thread.

`make bench-peers` gives the worker row's CPU per 1,000 tokens as one number (N against N + 96
requests, start-up cancelled). This says which thread spent it. A worker process
(tests/bench/worker_threads_probe.py: Django on a fresh SQLite database, each run through
runs.worker.execution, the in-process worker's path) runs a concurrency run at 1 and at 16
streams against a simulator in a process of its own (40 tok/s for one stream, batch_cost 0.2:
160 tok/s in all at 16). Mid-run, after WARM_S, each thread's CPU is read over WINDOW_S:

- the measuring loop (engine client, the job's core, the run's guard, the client-health probe),
  the reference every other figure is a ratio to;
- the recorder (taking the telemetry readings, storing samples, live updates), the database
  thread the async ORM runs on, the telemetry sampler, the loop's executor and anything else.

Each as % of a core and as CPU seconds per 1,000 tokens generated in the window. What is spent
per second and not per token (telemetry, heartbeats, flushes) weighs more per token on a slower
engine: the race's llama-server streams fewer tokens a second than this simulator. No goal: the
figures say where to look, the race says whether it is enough.
"""
from __future__ import annotations

from typing import Any

from tests.bench.figures import figure
from tests.bench.worker_probe import run_probe

PROFILE = {"decode_tps": 40, "ttft_ms": 20, "lookahead": 0, "batch_cost": 0.2, "model": "sim-threads"}
LEVELS = (1, 16)
LOOP = "measuring loop"


def run(short: bool) -> dict[str, Any]:
    """One run per level in the worker process; each thread's share of the window."""
    plan = {
        "profile": PROFILE, "levels": list(LEVELS), "answer_tokens": 32,
        "warm_s": 4.0 if short else 8.0, "window_s": 4.0 if short else 20.0, "spare_s": 3.0,
        # each stream's speed at each level, so a run outlasts its window (simulator's batch model)
        "stream_tps": {str(c): PROFILE["decode_tps"] / (1 + PROFILE["batch_cost"] * (c - 1)) for c in LEVELS},
    }
    results = _probe(plan)
    figures: list[dict[str, Any]] = []
    for result in results:
        figures += _figures(result)
    return {"figures": figures, "profile": PROFILE, "plan": plan, "runs": results}


def _probe(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return run_probe("tests.bench.worker_threads_probe", plan, timeout_s=900)


def _figures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per thread: % of a core, and CPU s per 1,000 tokens as a ratio to the measuring loop's."""
    c, window, tokens = result["level"], result["window_s"], result["tokens"]
    per_k = {name: 1000 * used / tokens for name, used in result["cpu_s"].items() if used > 0}
    loop = per_k.get(LOOP)
    rows = [
        figure(
            f"{name}, {c} stream(s)", value, "s/1k tok", reference=loop, reference_name=LOOP,
            note=f"{100 * result['cpu_s'][name] / window:.2f} % of a core",
        )
        for name, value in sorted(per_k.items(), key=lambda kv: -kv[1])
    ]
    total = sum(per_k.values())
    note = f"{tokens:.0f} tokens in {window:.1f} s ({tokens / window:.0f} tok/s), " \
           f"{100 * sum(result['cpu_s'].values()) / window:.2f} % of a core"
    return [*rows, figure(f"whole worker, {c} stream(s)", total, "s/1k tok", reference=loop,
                          reference_name=LOOP, note=note)]
