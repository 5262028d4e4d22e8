"""Benchmark 1, fidelity: the harness's timing error against a simulator playing a known schedule.

The simulator (its own process, so it shares no GIL with the harness) streams with speculative
decoding (several tokens per chunk) and logs when it actually wrote each chunk. The harness's
error is then client arrival minus server write, free of the simulator's own lateness:
- TTFT error: client TTFT minus the simulator's (first write minus request arrival), so it
  holds the request's and the first chunk's trips through loopback and both HTTP stacks;
- gap error: each client inter-chunk gap minus the same gap between the writes;
- decode tok/s error: the client's figure against (tokens - 1) / (last write - first write).
The reference is the bare loopback round trip to another process, measured in the same run.
"""
from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any

from engines.clients import Generation, GenerationRequest, client_for
from engines.simulator import SimProfile
from runs.core.metrics import decode_tps_client
from tests.bench.figures import figure, percentiles
from tests.bench.simproc import loopback_rtt_s, simulator_process

PROFILE = SimProfile(
    decode_tps=80, ttft_ms=50, lookahead=4, acceptance=0.7, batch_cost=0.0, model="sim-fidelity"
)
GOAL_MS, GOAL_PCT = 0.5, 0.5
WARM_SEED = 1_000_000  # seeds name each request in the simulator's send log; warm-ups stay apart


@dataclass(frozen=True)
class Size:
    """How much to measure: reply length, sequential single-stream requests, bursts of `streams`."""

    tokens: int
    single: int
    bursts: int
    streams: int = 16


FULL, SHORT = Size(tokens=128, single=20, bursts=6), Size(tokens=12, single=2, bursts=1)


def run(short: bool) -> dict[str, Any]:
    """Measure with 1 and with 16 concurrent streams; figures in ms and %."""
    size = SHORT if short else FULL
    rtt = loopback_rtt_s(200 if short else 2000)
    with simulator_process(PROFILE) as sim:
        gens = asyncio.run(_measure(sim.url, size))
        sends = sim.sends()
    figures: list[dict[str, Any]] = []
    for streams, batch in gens.items():
        errors = [_errors(gen, sends[seed]) for seed, gen in batch]
        figures += _figures(streams, _pool(errors), rtt["median"])
    return {"figures": figures, "profile": asdict(PROFILE), "size": asdict(size), "loopback_rtt_s": rtt}


def _request(tokens: int, seed: int) -> GenerationRequest:
    messages = [{"role": "user", "content": "go"}]
    return GenerationRequest(model="sim", messages=messages, max_tokens=tokens, seed=seed)


async def _measure(url: str, size: Size) -> dict[int, list[tuple[int, Generation]]]:
    """{streams: [(seed, generation)]}: sequential single requests, then bursts of concurrent ones."""
    client = client_for("llama-server", url)
    async with client:
        # Warm the pool: every stream of a burst then reuses an open connection, as in a run.
        await asyncio.gather(*(client.generate(_request(2, WARM_SEED + i)) for i in range(size.streams)))
        single = [(seed, await client.generate(_request(size.tokens, seed))) for seed in range(size.single)]
        bursts: list[tuple[int, Generation]] = []
        for b in range(size.bursts):
            seeds = [1000 + b * size.streams + i for i in range(size.streams)]
            done = await asyncio.gather(*(client.generate(_request(size.tokens, s)) for s in seeds))
            bursts += zip(seeds, done, strict=True)
    return {1: single, size.streams: bursts}


def _errors(gen: Generation, sent: dict[str, Any]) -> dict[str, list[float]]:
    """One reply's errors (seconds, and % for decode speed) from its chunks and the send log."""
    arrivals, writes = [c.t for c in gen.chunks], sent["sent"]
    if len(arrivals) != len(writes):
        raise RuntimeError(f"{len(arrivals)} chunks arrived but the simulator wrote {len(writes)}")
    server_ttft = writes[0] - sent["arrived"]
    tokens = sum(sent["tokens"])
    server_tps = (tokens - 1) / (writes[-1] - writes[0])
    client_tps = decode_tps_client(gen)
    assert client_tps is not None and gen.first_token_at is not None
    return {
        "ttft": [(gen.first_token_at - gen.sent_at) - server_ttft],
        "gap": [(a1 - a0) - (w1 - w0) for (a0, w0), (a1, w1) in pairwise(zip(arrivals, writes, strict=True))],
        "arrival": [a - w for a, w in zip(arrivals, writes, strict=True)],
        "tps_pct": [100 * (client_tps / server_tps - 1)],
        "late": [w - d for w, d in zip(writes, sent["due"], strict=True)],
    }


def _pool(errors: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {key: [abs(v) for e in errors for v in e[key]] for key in errors[0]}


def _figures(streams: int, errors: dict[str, list[float]], rtt_s: float) -> list[dict[str, Any]]:
    where = f"{streams} stream{'s' if streams > 1 else ''}"
    rtt_ms = rtt_s * 1000
    out = _ms_figures(f"TTFT error {{}} ({where})", errors["ttft"], rtt_ms, "bare loopback RTT", GOAL_MS)
    out += _ms_figures(f"gap error {{}} ({where})", errors["gap"], rtt_ms, "bare loopback RTT", GOAL_MS)
    out += _ms_figures(f"arrival - write {{}} ({where})", errors["arrival"], rtt_ms / 2, "half loopback RTT")
    for stat, value in percentiles(errors["tps_pct"]).items():
        goal = stat == "p99"
        out.append(figure(
            f"decode tok/s error {stat} ({where})", value, "%",
            goal=f"< {GOAL_PCT} %" if goal else "", met=value < GOAL_PCT if goal else None,
        ))
    late = percentiles(errors["late"])["p99"] * 1000
    note = "how late the simulator wrote against its schedule (the errors above use its actual write times)"
    out.append(figure(f"simulator lateness p99 ({where})", late, "ms", note=note if streams == 1 else ""))
    return out


def _ms_figures(
    name: str, seconds: list[float], reference_ms: float, reference_name: str, goal_ms: float | None = None
) -> list[dict[str, Any]]:
    """p50, p99 and max of errors in seconds, as ms figures; the goal (if any) applies to p99."""
    out = []
    for stat, value in percentiles(seconds).items():
        judged = goal_ms is not None and stat == "p99"
        out.append(figure(
            name.format(stat), value * 1000, "ms", reference=reference_ms, reference_name=reference_name,
            goal=f"< {goal_ms} ms" if judged else "", met=value * 1000 < goal_ms if judged else None,
        ))
    return out
