"""Benchmark 8, telemetry: what the 10 Hz hardware sampler costs a run, and whether it delays a request.

A worker process (tests/bench/telemetry_probe.py: Django on a fresh SQLite database, the whole
run through runs.worker.execution, so the drain's database writes count) runs the same speed
run against a simulator in a process of its own (a fixed token schedule; its CPU is not the
worker's) with telemetry off (SPARKDASH_TELEMETRY_HZ=0), at 10 Hz and at 20 Hz. Each round runs
off, 10 Hz, off, 20 Hz, the order rotated by one each round, so drift falls on every arm alike;
the two off runs of a round give the noise every on-vs-off difference is held against.
Figures: the sampler thread's CPU as % of the run's wall time (goal < 1 % at 10 Hz); the worker
process's CPU per run on against off and what telemetry adds as % of a core (goal < 1 %); TTFT
and end-to-end p50/p99 on against off: requests count as delayed when the median over rounds of
on minus the round's mean off exceeds the median |off - off| of the rounds (or 1 ms, the larger).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from tests.bench.figures import figure, percentiles
from tests.bench.worker_probe import run_probe

GOAL_PCT = 1.0
FLOOR_MS = 1.0  # timer and scheduler jitter: no bound tighter than this
PROFILE = {"decode_tps": 100, "ttft_ms": 20, "lookahead": 0, "batch_cost": 0.0, "model": "sim-telemetry"}
ARMS = (("off", 0.0), ("10 Hz", 10.0), ("off", 0.0), ("20 Hz", 20.0))


@dataclass(frozen=True)
class Size:
    """Rounds of the four runs, speed-job repetitions (6 prompts each), reply length, idle baseline."""

    rounds: int
    reps: int
    max_tokens: int
    baseline_s: float


FULL, SHORT = Size(rounds=3, reps=2, max_tokens=100, baseline_s=2.0), Size(2, 1, 30, 1.0)


def run(short: bool) -> dict[str, Any]:
    """Run the rounds in the worker process; figures for 10 Hz and 20 Hz against off."""
    size = SHORT if short else FULL
    plan = [ARMS[(i + r) % len(ARMS)] for r in range(size.rounds) for i in range(len(ARMS))]
    results = _probe({"profile": PROFILE, "runs": plan} | asdict(size))
    rounds = [results[i : i + len(ARMS)] for i in range(0, len(results), len(ARMS))]
    figures: list[dict[str, Any]] = []
    for label in ("10 Hz", "20 Hz"):
        figures += _cpu_figures(label, rounds) + _latency_figures(label, rounds)
    return {"figures": figures, "size": asdict(size), "profile": PROFILE, "runs": results}


def _probe(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return run_probe("tests.bench.telemetry_probe", plan, timeout_s=1800)


def _arm(rounds: list[list[dict[str, Any]]], label: str) -> list[dict[str, Any]]:
    return [r for one in rounds for r in one if r["label"] == label]


def _offs(one: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    first, second = (r for r in one if r["label"] == "off")
    return first, second


def _cpu_figures(label: str, rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The sampler's own CPU share, the worker's CPU per run, and what telemetry adds to it."""
    on = _arm(rounds, label)
    sampler_pct = max(100 * r["sampler_cpu_s"] / r["wall_s"] for r in on)
    off_share = statistics.median(100 * r["cpu_s"] / r["wall_s"] for r in _arm(rounds, "off"))
    added, noise = [], []
    for one in rounds:
        a, b = _offs(one)
        run = next(r for r in one if r["label"] == label)
        added.append(100 * (run["cpu_s"] - (a["cpu_s"] + b["cpu_s"]) / 2) / run["wall_s"])
        noise.append(100 * abs(a["cpu_s"] - b["cpu_s"]) / a["wall_s"])
    on_cpu = statistics.median(r["cpu_s"] for r in on)
    off_cpu = statistics.median(r["cpu_s"] for r in _arm(rounds, "off"))
    samples = statistics.median(r["telemetry_samples"] for r in on)
    wall = statistics.median(r["wall_s"] for r in on)
    return [
        figure(
            f"sampler thread CPU, % of run wall time ({label}, worst run)", sampler_pct, "%",
            reference=off_share, reference_name="worker CPU % of wall, telemetry off",
            goal=f"< {GOAL_PCT:g} %", met=sampler_pct < GOAL_PCT,
            note=f"sources {', '.join(on[0]['sources'])}; "
            f"{samples:.0f} telemetry samples stored per {wall:.1f} s run",
        ),
        figure(
            f"worker CPU per run ({label})", on_cpu, "s", reference=off_cpu, reference_name="telemetry off",
        ),
        figure(
            f"CPU telemetry adds, % of a core ({label}, median round)", statistics.median(added), "%",
            reference=statistics.median(noise), reference_name="|off - off| in the same rounds",
            goal=f"< {GOAL_PCT:g} %", met=statistics.median(added) < GOAL_PCT,
            note="the sampler thread and the drain's sample writes to the database, per round: "
            + ", ".join(f"{a:+.2f}" for a in added),
        ),
    ]


def _latency_figures(label: str, rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """TTFT and e2e p50/p99 with telemetry on against off (pooled), judged round by round: the
    median over rounds of on minus the round's mean off, against the median of off minus off."""
    figures = []
    for key, name in (("ttft_s", "TTFT"), ("e2e_s", "e2e")):
        on = percentiles([v for r in _arm(rounds, label) for v in r[key]])
        off = percentiles([v for r in _arm(rounds, "off") for v in r[key]])
        for q in ("p50", "p99"):
            diffs, spreads = [], []
            for one in rounds:
                a, b = (percentiles(r[key])[q] for r in _offs(one))
                run = next(r for r in one if r["label"] == label)
                diffs.append(1e3 * (percentiles(run[key])[q] - (a + b) / 2))
                spreads.append(1e3 * abs(a - b))
            diff_ms = statistics.median(diffs)
            bound_ms = max(FLOOR_MS, statistics.median(spreads))
            figures.append(figure(
                f"{name} {q} ({label})", 1e3 * on[q], "ms", reference=1e3 * off[q], reference_name="off",
                goal=f"on - off <= {bound_ms:.2f} ms", met=diff_ms <= bound_ms,
                note=f"on - off by round {', '.join(f'{d:+.2f}' for d in diffs)} ms, median {diff_ms:+.2f};"
                f" bound: median |off - off| of the rounds, at least {FLOOR_MS:g} ms",
            ))
    return figures
