"""Benchmark 2, agreement: our figures against the engine's own and against GuideLLM's.

On the real llama-server from `make engine` (Gemma 3 270M, 2 threads, one slot), under the
shared engine lock. Every request asks for exactly TOKENS tokens (ignore_eos), one at a time.
- Engine: our client decode tok/s against llama-server's timings.predicted_per_second, per
  request, medians compared (goal: within 2 %).
- Peer: GuideLLM sends the same prompts (system + user), same length, same sampling, same
  concurrency (1). An unrecorded pass over every prompt comes first: llama-server keeps the
  prompts it has seen in a RAM cache, so without it our first pass alone would pay for full
  prompts. Our run is split in two halves around GuideLLM's, so a drift of the shared box's
  speed hits both sides alike. Medians of TTFT and of output tok/s (tokens / request latency, GuideLLM's
  definition) are compared (goal: within 1 %).
  The engine's log tells, per request, how many prompt tokens it evaluated and how long that
  took; TTFT minus that prompt time is what each harness (HTTP, its own code, scheduling) adds,
  which shows where a TTFT difference between the two comes from.
"""
from __future__ import annotations

import re
import statistics
import tempfile
from pathlib import Path
from typing import Any

from engines.clients import GenerationRequest, client_for
from measure import event_loop
from runs.core.jobs.prompts import SPEED_PROMPTS, Prompt
from runs.core.request_figures import request_metrics, send
from tests.bench.engine import engine_missing, llama_server
from tests.bench.figures import figure, not_measured
from tests.bench.guidellm_peer import ensure_guidellm, run_guidellm

ENGINE_GOAL, PEER_GOAL = 0.02, 0.01
FULL_TOKENS, SHORT_TOKENS = 96, 8
PASSES = 3  # over the prompts, per side and half: one prompt's TTFT varies ~10 % between requests


def run(short: bool) -> dict[str, Any]:
    """Engine agreement always (short: two tiny requests); GuideLLM in a full run only."""
    missing = engine_missing()
    if missing:
        figures = [not_measured("client vs engine decode tok/s", "tok/s", missing), *_no_peer(missing)]
        return {"figures": figures}
    prompts = SPEED_PROMPTS[:1] if short else SPEED_PROMPTS * PASSES
    tokens = SHORT_TOKENS if short else FULL_TOKENS
    peer_missing = "short mode" if short else ensure_guidellm(install=True)
    with tempfile.TemporaryDirectory(prefix="sparkdash-bench-") as tmp:
        log = Path(tmp) / "llama-server.log"
        with llama_server(log=log) as url:
            first = event_loop.run(_ours(url, prompts, tokens, warmup=True))
            peer, reason = _peer(url, prompts, tokens, Path(tmp), peer_missing)
            second = event_loop.run(_ours(url, prompts, tokens, warmup=False))
        evals = engine_timings_in(log.read_text(errors="replace"))
    ours = first + second
    figures = _engine_figures(ours)
    if peer:
        split = _split_evals(evals, len(set(prompts)), len(first), len(peer), len(second))
        figures += _peer_figures(ours, peer) + _engine_split_figures(ours, peer, split)
    else:
        figures += _no_peer(reason)
    return {"figures": figures, "tokens": tokens, "ours": ours, "guidellm": peer, "engine_timings": evals}


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
    """Each prompt once, one at a time (after an unrecorded pass over them when `warmup`)."""
    rows: list[dict[str, Any]] = []
    async with client_for("llama-server", url) as client:
        # The engine keeps prompts it has seen in a RAM cache and the later passes find them there,
        # so one unrecorded pass over every prompt first: all three passes then start warm.
        for prompt in dict.fromkeys(prompts) if warmup else ():
            await send(client, _request(prompt, tokens), f"warm-up {prompt.name}")
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


# llama-server's per-request timing lines: "prompt eval time =   61.05 ms /    38 tokens (...)"
# then "       eval time =  2410.30 ms /    95 tokens (...)".
_PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_EVAL = re.compile(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
Timing = tuple[float, int, float, int]  # prompt ms, prompt tokens evaluated, decode ms, tokens decoded


def engine_timings_in(log: str) -> list[Timing]:
    """Each request's engine timings, in the order the engine served them."""
    prompts, decodes = _PROMPT_EVAL.findall(log), _EVAL.findall(log)
    pairs = zip(prompts, decodes, strict=True)
    return [(float(pm), int(pn), float(dm), int(dn)) for (pm, pn), (dm, dn) in pairs]


def _split_evals(
    evals: list[Timing], warmup: int, first: int, peer: int, second: int
) -> dict[str, list[Timing]] | None:
    """The log's requests as ours and GuideLLM's (served one at a time: warm-up, ours, its, ours)."""
    if len(evals) != warmup + first + peer + second:
        return None  # e.g. GuideLLM sent requests of its own: the split would be a guess
    ours = evals[warmup : warmup + first] + evals[warmup + first + peer :]
    return {"ours": ours, "guidellm": evals[warmup + first : warmup + first + peer]}


def _engine_split_figures(
    ours: list[dict[str, Any]], peer: list[dict[str, float]], split: dict[str, list[Timing]] | None
) -> list[dict[str, Any]]:
    """Both sides' requests against the engine's own timings of them: what is left after the engine's
    time is the harness's own (HTTP, code, scheduling), free of the engine's drift between passes."""
    if split is None:
        why = "the engine log did not split by request"
        return [not_measured("TTFT minus engine prompt time, ours vs GuideLLM (median)", "ms", why)]
    parts = {side: _parts(rows, split[side]) for side, rows in (("ours", ours), ("guidellm", peer))}
    left, prompt_ms, tokens, tps, rest = parts["ours"]
    peer_left, peer_prompt_ms, _, peer_tps, peer_rest = parts["guidellm"]
    return [
        figure("TTFT minus engine prompt time, ours vs GuideLLM (median)", left, "ms", reference=peer_left,
               reference_name="GuideLLM", note="what each harness adds to the engine's own time"),
        figure("request time minus engine prompt and decode time, ours vs GuideLLM (median)", rest, "ms",
               reference=peer_rest, reference_name="GuideLLM",
               note="output tok/s = tokens / request time: what each harness adds to it"),
        figure("engine prompt eval time, our requests vs GuideLLM's (median)", prompt_ms, "ms",
               reference=peer_prompt_ms, reference_name="GuideLLM's requests",
               note=f"the engine evaluated a median {tokens:g} prompt tokens per request (the rest cached)"),
        figure("engine decode tok/s, our requests vs GuideLLM's (median)", tps, "tok/s", reference=peer_tps,
               reference_name="GuideLLM's requests", note="from the engine's own eval time of each request"),
        figure("GuideLLM decode tok/s vs the engine's own for its requests (median)",
               statistics.median(r["decode_tps"] for r in peer), "tok/s", reference=peer_tps,
               reference_name="engine eval time"),
    ]


def _parts(rows: list[dict[str, Any]], evals: list[Timing]) -> tuple[float, float, float, float, float]:
    """Medians of TTFT minus the engine's prompt time (ms), of that time, of its prompt tokens, of the
    engine's decode tok/s, and of the request time minus the engine's prompt and decode time (ms)."""
    pairs = list(zip(rows, evals, strict=True))
    left = statistics.median(1000 * r["ttft_s"] - e[0] for r, e in pairs)
    rest = statistics.median(1000 * r["e2e_s"] - e[0] - e[2] for r, e in pairs)
    return (left, statistics.median(e[0] for e in evals), statistics.median(e[1] for e in evals),
            statistics.median(1000 * e[3] / e[2] for e in evals), rest)
