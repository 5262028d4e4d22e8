"""Benchmark 2, agreement: our figures against the engine's own and against GuideLLM's.

On the real llama-server from `make engine` (Gemma 3 270M, 2 threads, one slot), under the
shared engine lock. Every request asks for exactly TOKENS tokens (ignore_eos), one at a time.
- Engine: our client decode tok/s against llama-server's timings.predicted_per_second, per
  request, medians compared (goal: within 2 %).
- Peer: GuideLLM sends the same prompts (system + user), same length, same concurrency (1).
  Our run is split in two halves around GuideLLM's, so a drift of the shared box's speed hits
  both sides alike. Medians of TTFT and of output tok/s (tokens / request latency, GuideLLM's
  definition) are compared (goal: within 1 %).
"""
from __future__ import annotations

import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import Any

from engines.clients import GenerationRequest, client_for
from runs.core.metrics import request_metrics, send
from runs.core.prompts import SPEED_PROMPTS, Prompt
from tests.bench.engine import engine_missing, llama_server
from tests.bench.figures import figure, not_measured
from tests.bench.guidellm_peer import ensure_guidellm, run_guidellm

ENGINE_GOAL, PEER_GOAL = 0.02, 0.01
FULL_TOKENS, SHORT_TOKENS = 96, 8


def run(short: bool) -> dict[str, Any]:
    """Engine agreement always (short: two tiny requests); GuideLLM in a full run only."""
    missing = engine_missing()
    if missing:
        figures = [not_measured("client vs engine decode tok/s", "tok/s", missing), *_no_peer(missing)]
        return {"figures": figures}
    prompts = SPEED_PROMPTS[:1] if short else SPEED_PROMPTS
    tokens = SHORT_TOKENS if short else FULL_TOKENS
    peer_missing = "short mode" if short else ensure_guidellm(install=True)
    with tempfile.TemporaryDirectory(prefix="sparkdash-bench-") as tmp, llama_server() as url:
        first = asyncio.run(_ours(url, prompts, tokens, warmup=True))
        peer, reason = _peer(url, prompts, tokens, Path(tmp), peer_missing)
        second = asyncio.run(_ours(url, prompts, tokens, warmup=False))
    ours = first + second
    figures = _engine_figures(ours) + (_peer_figures(ours, peer) if peer else _no_peer(reason))
    return {"figures": figures, "tokens": tokens, "ours": ours, "guidellm": peer}


def _peer(
    url: str, prompts: tuple[Prompt, ...], tokens: int, workdir: Path, missing: str | None
) -> tuple[list[dict[str, float]] | None, str]:
    if missing:
        return None, missing
    try:
        return run_guidellm(url, prompts, tokens, workdir), ""
    except (RuntimeError, OSError, KeyError, ValueError) as exc:
        return None, f"GuideLLM did not run: {exc}"


def _request(prompt: Prompt, tokens: int) -> GenerationRequest:
    return GenerationRequest(
        model="gemma", messages=prompt.messages(), max_tokens=tokens, extra={"ignore_eos": True}
    )


async def _ours(url: str, prompts: tuple[Prompt, ...], tokens: int, warmup: bool) -> list[dict[str, Any]]:
    """Each prompt once, one at a time (after one unrecorded request when `warmup`)."""
    rows: list[dict[str, Any]] = []
    async with client_for("llama-server", url) as client:
        if warmup:
            await send(client, _request(prompts[0], tokens), "warm-up")
        for prompt in prompts:
            m = request_metrics(await send(client, _request(prompt, tokens), prompt.name))
            rows.append(m | {"output_tps": m["output_tokens"] / m["e2e_s"], "prompt": prompt.name})
    return rows


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _engine_figures(ours: list[dict[str, Any]]) -> list[dict[str, Any]]:
    client, engine = _median(ours, "decode_tps_client"), _median(ours, "decode_tps_engine")
    worst = max(abs(r["decode_tps_client"] / r["decode_tps_engine"] - 1) for r in ours)
    return [
        figure(
            "client vs engine decode tok/s (median)", client, "tok/s", reference=engine,
            reference_name="llama-server predicted_per_second", goal=f"within {ENGINE_GOAL:.0%}",
            met=abs(client / engine - 1) <= ENGINE_GOAL,
        ),
        figure("client vs engine decode tok/s, worst request", 100 * worst, "%",
               note=f"{len(ours)} requests"),
    ]


def _peer_figures(ours: list[dict[str, Any]], peer: list[dict[str, float]]) -> list[dict[str, Any]]:
    out = []
    compared = (("TTFT", "ttft_s", "ms", 1000), ("output tok/s", "output_tps", "tok/s", 1))
    for name, key, unit, scale in compared:
        mine, theirs = scale * _median(ours, key), scale * statistics.median(r[key] for r in peer)
        out.append(figure(
            f"{name} ours vs GuideLLM (median)", mine, unit, reference=theirs, reference_name="GuideLLM",
            goal=f"within {PEER_GOAL:.0%}", met=abs(mine / theirs - 1) <= PEER_GOAL,
        ))
    mine, theirs = _median(ours, "decode_tps_client"), statistics.median(r["decode_tps"] for r in peer)
    out.append(figure("decode tok/s ours vs GuideLLM (median)", mine, "tok/s", reference=theirs,
                      reference_name="GuideLLM (1000 / ITL)"))
    return out


def _no_peer(reason: str) -> list[dict[str, Any]]:
    goal = f"within {PEER_GOAL:.0%}"
    return [not_measured(f"{name} ours vs GuideLLM (median)", unit, reason, goal)
            for name, unit in (("TTFT", "ms"), ("output tok/s", "tok/s"))]
