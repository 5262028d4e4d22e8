"""Benchmark 7, relay: what the recording relay adds to TTFT and to each chunk, and its CPU.

The simulator (its own process) streams one token a chunk and logs when it writes each chunk
(GET /sim/sends, on the clock every process shares); the relay runs in a process of its own
(tests/bench/relayproc.py), as `manage.py relay` does. A bare socket client
(tests/bench/bare_client.py) reads the same replies directly from the simulator and through the
relay, alternately, in the same run. Per reply:
- TTFT error: client TTFT minus the simulator's own (first write minus request arrival);
- chunk latency: each chunk's client arrival minus the simulator's write.
The relay's added figure is through-the-relay minus direct, at p50 and p99, with 1 and with 16
concurrent streams. CPU per 1,000 relayed tokens is the relay process's CPU over its phases,
held against the bare client's own CPU per 1,000 tokens (the floor of reading a stream at all).
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from engines.simulator import SimProfile
from tests.bench.bare_client import BareClient, BareGeneration
from tests.bench.fidelity import Size  # the same measure of how much to send
from tests.bench.figures import figure, percentiles
from tests.bench.simproc import SimProcess, child_process, simulator_process

PROFILE = SimProfile(decode_tps=100, ttft_ms=20, batch_cost=0.0, model="sim-relay")
GOAL_TTFT_MS, GOAL_CHUNK_MS = 2.0, 1.0
WARM_SEED = 1_000_000


FULL, SHORT = Size(tokens=100, single=20, bursts=4), Size(tokens=10, single=2, bursts=1)


@dataclass
class Phase:
    """The replies one route (direct or relayed) read at one concurrency, and the CPU they cost."""

    seen: list[tuple[int, BareGeneration]] = field(default_factory=list)
    cpu_s: float = 0.0  # the relay process's for "relay", the bench process's for "direct"
    tokens: int = 0


Phases = dict[str, dict[int, Phase]]  # "direct" | "relay" -> streams -> phase


@contextmanager
def relay_process(upstream_url: str) -> Iterator[SimProcess]:
    """The relay in front of `upstream_url`, in a child process (its URL and pid)."""
    with child_process(upstream_url, "tests.bench.relayproc") as (url, pid):
        yield SimProcess(url, pid)


def run(short: bool) -> dict[str, Any]:
    """Measure direct and relayed replies alternately, at 1 and 16 streams; figures per concurrency."""
    size = SHORT if short else FULL
    with simulator_process(PROFILE) as sim, relay_process(sim.url) as relay:
        phases = asyncio.run(_measure(sim.url, relay, size))
        sends = sim.sends()
    figures: list[dict[str, Any]] = []
    for streams in (1, size.streams):
        errors = {route: _pool(phases[route][streams], sends) for route in ("direct", "relay")}
        figures += _latency_figures(streams, errors)
        figures.append(_cpu_figure(streams, phases["relay"][streams], phases["direct"][streams]))
    return {"figures": figures, "profile": asdict(PROFILE), "size": asdict(size)}


async def _measure(sim_url: str, relay: SimProcess, size: Size) -> Phases:
    phases: Phases = {route: {1: Phase(), size.streams: Phase()} for route in ("direct", "relay")}
    direct = [BareClient(sim_url) for _ in range(size.streams)]
    relayed = [BareClient(relay.url) for _ in range(size.streams)]
    # Warm both routes up (the first replies pay for imports and new connections' setup).
    await asyncio.gather(*(c.generate(2, WARM_SEED + i) for i, c in enumerate(direct + relayed)))
    seed = 0
    for streams, rounds in ((1, size.single), (size.streams, size.bursts)):
        for _ in range(rounds):
            seeds = list(range(seed, seed + streams))
            await _round(phases["direct"][streams], direct[:streams], seeds, size.tokens, None)
            seeds = list(range(seed + streams, seed + 2 * streams))
            await _round(phases["relay"][streams], relayed[:streams], seeds, size.tokens, relay)
            seed += 2 * streams
    return phases


async def _round(
    phase: Phase, clients: list[BareClient], seeds: list[int], tokens: int, relay: SimProcess | None
) -> None:
    """One burst of replies on one route; the CPU it cost the relay (or, direct, this process)."""
    cpu = relay.cpu_s() if relay else time.process_time()
    done = await asyncio.gather(*(c.generate(tokens, s) for c, s in zip(clients, seeds, strict=True)))
    phase.cpu_s += (relay.cpu_s() if relay else time.process_time()) - cpu
    phase.seen += list(zip(seeds, done, strict=True))
    phase.tokens += tokens * len(seeds)


def _pool(phase: Phase, sends: dict[int, dict[str, Any]]) -> dict[str, list[float]]:
    """Every reply's TTFT error and every chunk's arrival minus write, in seconds."""
    ttft: list[float] = []
    chunk: list[float] = []
    for seed, seen in phase.seen:
        sent = sends[seed]
        writes = sent["sent"]
        if len(seen.arrivals) != len(writes):
            raise RuntimeError(f"{len(seen.arrivals)} chunks arrived but the simulator wrote {len(writes)}")
        ttft.append((seen.arrivals[0] - seen.sent_at) - (writes[0] - sent["arrived"]))
        chunk += [a - w for a, w in zip(seen.arrivals, writes, strict=True)]
    return {"ttft": ttft, "chunk": chunk}


def _latency_figures(streams: int, errors: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    where = f"{streams} stream{'s' if streams > 1 else ''}"
    out = []
    for label, key, goal in (("TTFT", "ttft", GOAL_TTFT_MS), ("chunk latency", "chunk", GOAL_CHUNK_MS)):
        direct, relayed = percentiles(errors["direct"][key]), percentiles(errors["relay"][key])
        for stat in ("p50", "p99"):
            added = 1000 * (relayed[stat] - direct[stat])
            judged = stat == "p99"
            out.append(figure(
                f"relay adds to {label} {stat} ({where})", added, "ms", reference=1000 * direct[stat],
                reference_name=f"direct {label} error {stat}", goal=f"< +{goal:g} ms" if judged else "",
                met=added < goal if judged else None,
                note=f"n={len(errors['relay'][key])} through the relay, {len(errors['direct'][key])} direct",
            ))
    return out


def _cpu_figure(streams: int, relayed: Phase, direct: Phase) -> dict[str, Any]:
    where = f"{streams} stream{'s' if streams > 1 else ''}"
    per_1000 = 1e6 * relayed.cpu_s / relayed.tokens
    return figure(
        f"relay CPU per 1,000 relayed tokens ({where})", per_1000, "ms",
        reference=1e6 * direct.cpu_s / direct.tokens, reference_name="bare client CPU per 1,000 tokens read",
        note=f"{relayed.tokens:,} tokens relayed, one token a chunk",
    )
