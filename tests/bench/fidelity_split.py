"""Benchmark 1, fidelity past one core: 64 and 256 streams, each level split across measuring
processes (runs.core.jobs.concurrency.split) as a concurrency sweep sends it, against the
simulator (its own process) playing ~20 tok/s per stream with no batch slowdown.

Each burst is one SplitLevels.level call whose requests differ only by seed, so that every row
(by its index) finds its reply in the simulator's send log; the errors are the client's figures
against the simulator's own write times, as in fidelity.py:
- TTFT error: the row's ttft_s minus (first write - request arrival);
- decode tok/s error: the row's decode_tps_client against (tokens - 1) / (last write - first write);
- achieved concurrency: the run's recorded figure (pace.py, time-weighted from the planned start to
  the first answer's end) and the peak of requests in flight, which is the requested number when
  every request was in flight at one moment.
No bare-client reference here: one bare client at 256 streams would be the bottleneck measured.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from engines.clients import GenerationRequest, client_for
from engines.simulator import SimProfile
from measure import event_loop
from measure.client_health import ClientHealth
from runs.core.jobs.concurrency.loop import summarize_level, total_tps
from runs.core.jobs.concurrency.split import LevelFigures, SplitLevels, SplitPlan
from tests.bench.figures import figure, percentiles
from tests.bench.simproc import simulator_process
from tests.runs.core.progress import CollectingProgress

PROFILE = SimProfile(
    decode_tps=20, ttft_ms=50, lookahead=4, acceptance=0.7, batch_cost=0.0, model="sim-fidelity"
)
TTFT_GOAL_MS, TPS_GOAL_PCT, ACHIEVED_SHARE_GOAL = 2.0, 0.5, 0.99


@dataclass(frozen=True)
class SplitSize:
    """Reply length, bursts per level, and the levels."""

    tokens: int
    bursts: int
    levels: tuple[int, ...]


FULL, SHORT = SplitSize(tokens=64, bursts=2, levels=(64, 256)), SplitSize(tokens=12, bursts=1, levels=(64,))


def run(short: bool) -> dict[str, Any]:
    """The split levels' figures (fidelity.run appends them to its own)."""
    size = SHORT if short else FULL
    with simulator_process(PROFILE) as sim:
        measured, health = event_loop.run(_measure(sim.url, size))
        sends = sim.sends()
    figures: list[dict[str, Any]] = []
    for c, bursts in measured.items():
        figures += _figures(c, bursts, sends)
    figures += _health_figures(health)
    return {"figures": figures, "profile": asdict(PROFILE), "size": asdict(size),
            "cpus": os.cpu_count(), "client_health": health}


def _request(tokens: int, seed: int) -> GenerationRequest:
    return GenerationRequest(model="sim", messages=[{"role": "user", "content": "go"}], max_tokens=tokens,
                             seed=seed)


Bursts = list[tuple[list[dict[str, Any]], dict[str, Any], list[int]]]  # (rows, level, seeds) each


async def _measure(url: str, size: SplitSize) -> tuple[dict[int, Bursts], dict[str, Any]]:
    measured: dict[int, Bursts] = {c: [] for c in size.levels}
    async with ClientHealth() as health, client_for("llama-server", url) as client:
        await client.generate(_request(2, 3_000_000))  # the job's own warm-up request
        async with SplitLevels(client, SplitPlan(split_from=1), health,
                               LevelFigures(summarize_level, total_tps)) as split:
            for c in size.levels:
                # A first short burst opens the level's connections, as a sweep's earlier levels would.
                opening = [_request(2, 4_000_000 + c + i) for i in range(c)]
                await split.level([opening], 2, CollectingProgress())
                for b in range(size.bursts):
                    seeds = [5_000_000 + c * 1000 + b * c + i for i in range(c)]
                    progress = CollectingProgress()
                    rows, level = await split.level([[_request(size.tokens, s) for s in seeds]], size.tokens,
                                                    progress)
                    measured[c].append((rows, level, seeds))
    return measured, health.figures()


def _errors(row: dict[str, Any], sent: dict[str, Any]) -> tuple[float, float | None]:
    """One reply's TTFT error (s) and decode tok/s error (%, None for a reply in one chunk),
    against the simulator's writes."""
    writes, tokens = sent["sent"], sum(sent["tokens"])
    ttft_error = row["ttft_s"] - (writes[0] - sent["arrived"])
    if writes[-1] <= writes[0] or not row["decode_tps_client"]:
        return ttft_error, None
    return ttft_error, 100 * (row["decode_tps_client"] / ((tokens - 1) / (writes[-1] - writes[0])) - 1)


def _peak_in_flight(rows: list[dict[str, Any]]) -> int:
    edges = sorted([(r["sent_at"], 1) for r in rows] + [(r["sent_at"] + r["e2e_s"], -1) for r in rows])
    peak = now = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def _figures(c: int, bursts: Bursts, sends: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    where = f"{c} streams, split"
    pairs = [_errors(row, sends[seeds[row["index"]]]) for rows, _, seeds in bursts for row in rows]
    ttft = percentiles([abs(t) for t, _ in pairs])
    tps = percentiles([abs(p) for _, p in pairs if p is not None])
    peak = min(_peak_in_flight(rows) for rows, _, _ in bursts)
    achieved = min(level["achieved_concurrency"] or 0.0 for _, level, _ in bursts)
    late = percentiles([w - d for rows, _, seeds in bursts for row in rows
                        for w, d in zip(sends[seeds[row["index"]]]["sent"], sends[seeds[row["index"]]]["due"],
                                        strict=True)])
    return [
        figure(f"TTFT error p50 ({where})", ttft["p50"] * 1000, "ms"),
        figure(f"TTFT error p99 ({where})", ttft["p99"] * 1000, "ms", goal=f"< {TTFT_GOAL_MS} ms",
               met=ttft["p99"] * 1000 < TTFT_GOAL_MS),
        figure(f"decode tok/s error p50 ({where})", tps["p50"], "%"),
        figure(f"decode tok/s error p99 ({where})", tps["p99"], "%", goal=f"< {TPS_GOAL_PCT} %",
               met=tps["p99"] < TPS_GOAL_PCT),
        figure(f"peak requests in flight ({where})", peak, "requests", reference=c,
               reference_name="requested", goal=f"= {c}", met=peak == c),
        figure(f"achieved concurrency, as recorded ({where})", achieved, "requests", reference=c,
               reference_name="requested", goal=f">= {ACHIEVED_SHARE_GOAL:g} x requested",
               met=achieved >= ACHIEVED_SHARE_GOAL * c,
               note="the lowest burst's; time-weighted from the planned start (pace.py), so the sends' ramp "
                    "counts against it"),
        figure(f"simulator lateness p99 ({where})", late["p99"] * 1000, "ms"),
    ]


def _health_figures(health: dict[str, Any]) -> list[dict[str, Any]]:
    children = (health.get("processes") or [])[1:]
    delay = health.get("schedule_delay_ms") or {}
    return [
        figure("measuring processes (split levels)", len(children), "processes",
               note=f"{os.cpu_count()} cores here: one per core beyond the first, and at least one per 100 "
                    "streams"),
        figure("schedule delay p99 (split levels)", delay.get("p99"), "ms"),
        figure("worst measuring loop lag p99", (health.get("loop_lag_ms") or {}).get("p99"), "ms"),
        figure("busiest measuring process CPU",
               max((p["cpu_pct_of_core"] or 0 for p in children), default=None), "% of a core"),
        figure("client-bound (split levels)", float(health["client_bound"]), "",
               note=", ".join(health["reasons"])),
    ]
