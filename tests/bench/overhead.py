"""Benchmark 3, overhead: the harness's CPU per 1,000 streamed tokens and the tok/s one process sustains.

A simulator in another process answers instantly (no TTFT, no decode time), so the harness's
own cost is all that limits it. The harness runs the real measurement path (the concurrency
job: client, stream parser, per-request figures) with a progress that only counts samples.
The sustained rate on one core is tokens / harness CPU seconds; the reference is what the
simulator's process spent producing the same tokens in the same run. The floor is a bare
asyncio socket client (tests/bench/bare_client.py: no HTTP library, no JSON) reading the same
streams in the same run, on the same event loop as the harness (uvloop's: measure/event_loop.py):
with one token a chunk every chunk is a read of its own, and what one event-loop wake per read
costs on this box is a part of any asyncio client's figure.

The harness and the floor are measured in ROUNDS alternate pairs, after an untimed warm-up job
(one-time imports and set-up are no part of a per-token cost), and their ratio is the median of
the pairs' ratios: on a shared box the load moves between rounds, and a pair sees the same load.
"""
from __future__ import annotations

import asyncio
import cProfile
import io
import pstats
import statistics
import time
from dataclasses import dataclass
from typing import Any

from engines.clients import client_for
from engines.simulator import SimProfile
from measure import event_loop
from runs.core.jobs.concurrency.loop import ConcurrencyJob, run_concurrency
from tests.bench.bare_client import BareClient
from tests.bench.figures import figure
from tests.bench.simproc import SimProcess, simulator_process

GOAL_TPS = 50_000
GOAL_RATIO = 1.3  # harness CPU per 1,000 tokens over the bare-socket floor's (issue 41)
ROUNDS = 3


@dataclass(frozen=True)
class Case:
    """One load: tokens per chunk (1 + accepted drafts), concurrent streams, reply length, bursts."""

    per_chunk: int
    streams: int
    tokens: int
    bursts: int

    @property
    def label(self) -> str:
        return f"{self.per_chunk} tok/chunk, {self.streams} stream{'s' if self.streams > 1 else ''}"

    def profile(self) -> SimProfile:
        # Every draft accepted: each chunk after the first carries exactly per_chunk tokens.
        return SimProfile(
            decode_tps=1e9, ttft_ms=0, lookahead=self.per_chunk - 1, acceptance=1.0, batch_cost=0.0
        )


FULL = (Case(1, 1, 4000, 4), Case(1, 16, 2000, 2), Case(8, 16, 8000, 2))
SHORT = (Case(1, 1, 50, 1), Case(8, 4, 100, 1))


class _Count:
    """A RunProgress that only counts tokens: the recorder's database work is measured by live_latency."""

    tokens = 0

    async def on_start(self, total: int) -> None:
        pass

    async def on_sample(self, sample_kind: str, values: dict[str, Any]) -> None:
        if sample_kind == "request":
            self.tokens += values["output_tokens"]

    async def on_summary_so_far(self, summary: dict[str, Any]) -> None:
        pass


def run(short: bool) -> dict[str, Any]:
    """Each case's CPU per 1,000 tokens, its ratio to the floor, sustained tok/s; a cProfile of a miss."""
    figures: list[dict[str, Any]] = []
    details: dict[str, Any] = {}
    for case in SHORT if short else FULL:
        with simulator_process(case.profile()) as sim:
            event_loop.run(_run_job(sim.url, Case(case.per_chunk, 1, 64, 1)))  # untimed warm-up
            m = _rounds(sim, case, 1 if short else ROUNDS)
            if not short and (m["tok_per_cpu_s"] < GOAL_TPS or m["floor_ratio"] > GOAL_RATIO):
                m["profile"] = _profile(sim, case)
        details[case.label] = m
        figures += _figures(case, m)
    return {"figures": figures, "cases": details}


def _rounds(sim: SimProcess, case: Case, rounds: int) -> dict[str, Any]:
    """Harness and floor measured alternately `rounds` times: the median round's figures, each
    round's, and the median of the rounds' harness / floor ratios."""
    each = []
    for _ in range(rounds):
        m = _measure(sim, case)
        m["bare_cpu_s"], m["bare_tokens"] = _measure_bare(sim.url, case)
        m["floor_ratio"] = (m["cpu_s"] / m["tokens"]) / (m["bare_cpu_s"] / m["bare_tokens"])
        each.append(m)
    ratios = sorted(m["floor_ratio"] for m in each)
    middle = sorted(each, key=lambda m: m["cpu_s"] / m["tokens"])[len(each) // 2]
    return middle | {"floor_ratio": statistics.median(ratios), "rounds": each}


def _job(case: Case) -> ConcurrencyJob:
    return ConcurrencyJob(model="sim", levels=(case.streams,), answer_tokens=case.tokens, reps=case.bursts)


async def _run_job(url: str, case: Case) -> int:
    """Run the job; the tokens streamed, its one warm-up request (of the same length) included."""
    count = _Count()
    async with client_for("llama-server", url) as client:
        await run_concurrency(client, _job(case), count)
    return count.tokens + case.tokens


def _measure(sim: SimProcess, case: Case) -> dict[str, Any]:
    """Harness CPU and wall time, and the simulator's CPU, over the whole job."""
    sim_cpu, cpu, wall = sim.cpu_s(), time.process_time(), time.perf_counter()
    tokens = event_loop.run(_run_job(sim.url, case))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sim_cpu = sim.cpu_s() - sim_cpu
    return {
        "tokens": tokens,
        "cpu_s": cpu,
        "wall_s": wall,
        "sim_cpu_s": sim_cpu,
        "tok_per_cpu_s": tokens / cpu,
        "tok_per_wall_s": tokens / wall,
        "harness_core_share": cpu / wall,
    }


def _measure_bare(url: str, case: Case) -> tuple[float, int]:
    """The bare socket client's CPU seconds and tokens over the same bursts of streams."""

    async def bursts() -> None:
        clients = [BareClient(url) for _ in range(case.streams)]
        for burst in range(case.bursts):
            done = await asyncio.gather(*(c.generate(case.tokens, burst) for c in clients))
            if any(not g.arrivals for g in done):
                raise RuntimeError("the bare client read no content chunk")

    cpu = time.process_time()
    event_loop.run(bursts())
    return time.process_time() - cpu, case.tokens * case.streams * case.bursts


def _profile(sim: SimProcess, case: Case) -> list[str]:
    """Where the harness's time goes, by own time: the top functions of a cProfile of the job."""
    profiler = cProfile.Profile()
    profiler.runcall(event_loop.run, _run_job(sim.url, case))
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    return [line for line in out.getvalue().splitlines() if line.strip()][-13:]


def _figures(case: Case, m: dict[str, Any]) -> list[dict[str, Any]]:
    per_1000_ms = 1e6 * m["cpu_s"] / m["tokens"]
    floor_ms = 1e6 * m["bare_cpu_s"] / m["bare_tokens"]
    rounds = ", ".join(f"{r['floor_ratio']:.2f}" for r in m["rounds"])
    return [
        figure(
            f"floor: bare socket client CPU per 1,000 tokens ({case.label})",
            floor_ms, "ms", reference=per_1000_ms, reference_name="harness",
            note=f"{m['bare_tokens']:,} tokens read with no HTTP library and no JSON parsing",
        ),
        figure(
            f"harness CPU per 1,000 tokens over the floor's ({case.label})", m["floor_ratio"], "x",
            goal=f"<= {GOAL_RATIO:g}x", met=m["floor_ratio"] <= GOAL_RATIO,
            note=f"median of {len(m['rounds'])} alternate rounds (each round's ratio: {rounds})",
        ),
        figure(
            f"harness CPU per 1,000 tokens ({case.label})", per_1000_ms, "ms",
            reference=1e6 * m["sim_cpu_s"] / m["tokens"], reference_name="simulator CPU for the same tokens",
            goal=f"< {1e6 / GOAL_TPS:g} ms", met=per_1000_ms < 1e6 / GOAL_TPS,
        ),
        figure(
            f"tok/s sustained on one core ({case.label})", m["tok_per_cpu_s"], "tok/s",
            reference=m["tok_per_wall_s"], reference_name="streamed tok/s achieved (wall)",
            goal=f">= {GOAL_TPS:,} tok/s", met=m["tok_per_cpu_s"] >= GOAL_TPS,
            note=f"harness used {100 * m['harness_core_share']:.0f} % of a core while streaming",
        ),
    ]
