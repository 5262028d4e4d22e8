"""Benchmark 1, fidelity: the harness's timing error against a simulator playing a known schedule.

The simulator (its own process, so it shares no GIL with the harness) streams with speculative
decoding (several tokens per chunk) and logs when it starts writing each chunk (GET /sim/sends,
on the clock every process shares). The harness's error is then client arrival minus server
write, free of the simulator's own lateness:
- TTFT error: client TTFT minus the simulator's (first write minus request arrival), so it holds
  the request's and the first chunk's trips through loopback and both HTTP stacks;
- gap error: each client inter-chunk gap minus the same gap between the writes;
- decode tok/s error: the client's figure against (tokens - 1) / (last write - first write).
At 64 and 256 streams (fidelity_split.py) the levels are split across measuring processes.
Same-run references: a bare socket client (tests/bench/bare_client.py) measured the same way in
the same phases, i.e. what this box allows any client, and the bare loopback round trip.
"""
from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any

from engines.clients import GenerationRequest, client_for
from engines.simulator import SimProfile
from measure import event_loop
from runs.core.request_figures import decode_tps_client
from tests.bench import fidelity_split
from tests.bench.bare_client import BareClient
from tests.bench.figures import figure, percentiles
from tests.bench.simproc import loopback_rtt_s, simulator_process

PROFILE = SimProfile(
    decode_tps=80, ttft_ms=50, lookahead=4, acceptance=0.7, batch_cost=0.0, model="sim-fidelity"
)
GOAL_MS, GOAL_PCT = 0.5, 0.5
WARM_SEED, BARE_SEED = 1_000_000, 2_000_000  # seeds name requests in the simulator's send log


@dataclass(frozen=True)
class Size:
    """How much to measure: reply length, sequential single-stream requests, bursts of `streams`."""

    tokens: int
    single: int
    bursts: int
    streams: int = 16


@dataclass(frozen=True)
class Seen:
    """One reply as a client saw it: when it was sent, each content chunk's arrival, its decode tok/s."""

    seed: int
    sent_at: float
    arrivals: list[float]
    decode_tps: float | None = None  # None: computed from the arrivals and the simulator's count


FULL, SHORT = Size(tokens=128, single=20, bursts=6), Size(tokens=12, single=2, bursts=1)
Phases = dict[str, dict[int, list[Seen]]]  # client ("harness" | "bare") -> streams -> replies


def run(short: bool) -> dict[str, Any]:
    """Measure with 1 and with 16 concurrent streams, the harness and a bare client alternately."""
    size = SHORT if short else FULL
    rtt = loopback_rtt_s(200 if short else 2000)
    with simulator_process(PROFILE) as sim:
        phases = event_loop.run(_measure(sim.url, size))
        sends = sim.sends()
    errors = {
        who: {streams: _pool([_errors(seen, sends[seen.seed]) for seen in replies])
              for streams, replies in by_streams.items()}
        for who, by_streams in phases.items()
    }
    figures = [figure("bare loopback round trip (median)", rtt["median"] * 1000, "ms")]
    for streams in errors["harness"]:
        figures += _figures(streams, errors["harness"][streams], errors["bare"][streams])
    split = fidelity_split.run(short)  # 64 and 256 streams, split across measuring processes
    return {"figures": figures + split["figures"], "profile": asdict(PROFILE), "size": asdict(size),
            "loopback_rtt_s": rtt, "split": {k: v for k, v in split.items() if k != "figures"}}


def _request(tokens: int, seed: int) -> GenerationRequest:
    messages = [{"role": "user", "content": "go"}]
    return GenerationRequest(model="sim", messages=messages, max_tokens=tokens, seed=seed)


async def _measure(url: str, size: Size) -> Phases:
    """Single requests then bursts, each step once by the harness and once by the bare client."""
    phases: Phases = {"harness": {1: [], size.streams: []}, "bare": {1: [], size.streams: []}}
    bare = [BareClient(url) for _ in range(size.streams)]
    async with client_for("llama-server", url) as client:
        # Warm both up (first requests pay for imports and the simulator's first replies).
        await asyncio.gather(*(client.generate(_request(2, WARM_SEED + i)) for i in range(size.streams)))
        await asyncio.gather(*(b.generate(2, WARM_SEED + 100 + i) for i, b in enumerate(bare)))
        for seed in range(size.single):
            phases["harness"][1].append(await _harness(client, size.tokens, seed))
            phases["bare"][1].append(await _bare(bare[0], size.tokens, BARE_SEED + seed))
        for b in range(size.bursts):
            seeds = [1000 + b * size.streams + i for i in range(size.streams)]
            phases["harness"][size.streams] += await asyncio.gather(
                *(_harness(client, size.tokens, s) for s in seeds))
            phases["bare"][size.streams] += await asyncio.gather(
                *(_bare(c, size.tokens, BARE_SEED + s) for c, s in zip(bare, seeds, strict=True)))
    return phases


async def _harness(client: Any, tokens: int, seed: int) -> Seen:
    gen = await client.generate(_request(tokens, seed))
    return Seen(seed, gen.sent_at, [c.t for c in gen.chunks], decode_tps_client(gen))


async def _bare(client: BareClient, tokens: int, seed: int) -> Seen:
    gen = await client.generate(tokens, seed)
    return Seen(seed, gen.sent_at, gen.arrivals)


def _errors(seen: Seen, sent: dict[str, Any]) -> dict[str, list[float]]:
    """One reply's errors (seconds, and % for decode speed) from its arrivals and the send log."""
    arrivals, writes = seen.arrivals, sent["sent"]
    if len(arrivals) != len(writes):
        raise RuntimeError(f"{len(arrivals)} chunks arrived but the simulator wrote {len(writes)}")
    tokens = sum(sent["tokens"])
    server_tps = (tokens - 1) / (writes[-1] - writes[0])
    client_tps = seen.decode_tps or (tokens - 1) / (arrivals[-1] - arrivals[0])
    return {
        "ttft": [(arrivals[0] - seen.sent_at) - (writes[0] - sent["arrived"])],
        "gap": [(a1 - a0) - (w1 - w0) for (a0, w0), (a1, w1) in pairwise(zip(arrivals, writes, strict=True))],
        "arrival": [a - w for a, w in zip(arrivals, writes, strict=True)],
        "tps_pct": [100 * (client_tps / server_tps - 1)],
        "late": [w - d for w, d in zip(writes, sent["due"], strict=True)],
    }


def _pool(errors: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {key: [abs(v) for e in errors for v in e[key]] for key in errors[0]}


Errors = dict[str, list[float]]


def _figures(streams: int, ours: Errors, bare: Errors) -> list[dict[str, Any]]:
    where = f"{streams} stream{'s' if streams > 1 else ''}"
    out: list[dict[str, Any]] = []
    rows = (
        ("TTFT error", "ttft", 1000, "ms", GOAL_MS),
        ("gap error", "gap", 1000, "ms", GOAL_MS),
        ("arrival - write", "arrival", 1000, "ms", None),
        ("decode tok/s error", "tps_pct", 1, "%", GOAL_PCT),
    )
    for label, key, scale, unit, goal in rows:
        reference = percentiles(bare[key])
        for stat, value in percentiles(ours[key]).items():
            judged = goal is not None and stat == "p99"
            out.append(figure(
                f"{label} {stat} ({where})", value * scale, unit, reference=reference[stat] * scale,
                reference_name="bare socket client", goal=f"< {goal} {unit}" if judged else "",
                met=value * scale < goal if judged and goal is not None else None,
            ))
    late = percentiles(ours["late"])["p99"] * 1000
    note = "how late the simulator wrote against its schedule (the errors above use its actual write times)"
    out.append(figure(f"simulator lateness p99 ({where})", late, "ms", note=note if streams == 1 else ""))
    return out
