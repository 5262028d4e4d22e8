"""Benchmark vllm_agreement: our TTFT, decode and output tok/s against vLLM's own benchmark.

One real vLLM engine (the CPU build and Gemma 3 270M from `make engine`, x86_64 only), under the
shared engine lock, serves both harnesses: SparkDash (its vLLM client, `send` and
`request_metrics`) and `vllm bench serve` (tests/bench/vllm_peer.py). Both send the same prompts
in the same order (system + user; the peer's one user message renders to the same tokens), the
same sampling (temperature 0, seed 0, ignore_eos, exactly TOKENS tokens), one at a time and then
at most 4 in flight. After one unrecorded pass (the engine's first requests are slow), passes go
SparkDash, vLLM, vLLM, SparkDash per level, so a linear drift of the shared box hits both alike.

Compared, per level, medians over requests (goal: within 2 %):
- TTFT: ours from the moment the request's headers go out to the first chunk with text; vLLM's
  from just before its POST to the first chunk with choices (the role chunk, content "").
- TPOT: ours is 1 / decode tok/s = (last token - first token) / (output tokens - 1); vLLM's TPOT
  is (latency - TTFT) / (output tokens - 1), latency to its last chunk with choices: the same span.
- ITL: gaps between our text chunks, against vLLM's gaps between its chunks with choices (one
  more per request: role chunk to first token, a few microseconds).
- output tok/s: all output tokens / (last finish - first send) over each pass (our `total_tps`;
  vLLM's output_throughput is tokens / its pass duration), pooled over a side's passes.
The decomposition reads vLLM's /metrics across each pass (vllm:time_to_first_token_seconds,
inter_token_latency_seconds, e2e_request_latency_seconds, generation_tokens_total): the engine's
own mean TTFT, ITL and request time for each side's requests, and what each harness adds over
them (the counters give sums, so these are means).
"""
from __future__ import annotations

import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from engines.clients import EngineError, GenerationRequest, client_for
from engines.counters_text import VLLM, parse_counters, request_delta
from measure import event_loop
from runs.core.jobs.concurrency.loop import total_tps
from runs.core.jobs.prompts import SPEED_PROMPTS, Prompt
from runs.core.request_figures import request_metrics, send
from tests.bench.engine import VLLM_MODEL, VLLM_PYTHON, vllm_missing, vllm_server
from tests.bench.figures import figure, not_measured
from tests.bench.vllm_peer import per_request, run_vllm_bench

GOAL = 0.02
FULL_TOKENS, SHORT_TOKENS = 96, 8
LEVELS = (1, 4)
OURS, PEER = "SparkDash", "vllm bench serve"
ORDER = (OURS, PEER, PEER, OURS)  # per level: A B B A, so a linear drift of the box cancels
SHORT_ORDER = (OURS, PEER)
PASS_PROMPTS = {1: SPEED_PROMPTS, 4: SPEED_PROMPTS * 2}  # per pass: 6 one at a time, 12 four at a time
SHORT_PROMPTS = {1: SPEED_PROMPTS[:1], 4: SPEED_PROMPTS[:4]}
# (figure, row key, unit, scale): the medians compared per level
COMPARED = (("TTFT", "ttft_s", "ms", 1000.0), ("TPOT", "tpot_s", "ms", 1000.0), ("ITL", "itls", "ms", 1000.0))


def run(short: bool) -> dict[str, Any]:
    """Both harnesses on one vLLM engine, one at a time and at concurrency 4 (short: a tiny pass each)."""
    missing = vllm_missing()
    if missing:
        return {"figures": [f for c in LEVELS for f in _not_measured(c, missing)]}
    tokens = SHORT_TOKENS if short else FULL_TOKENS
    prompts, order = (SHORT_PROMPTS, SHORT_ORDER) if short else (PASS_PROMPTS, ORDER)
    figures: list[dict[str, Any]] = []
    passes: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="sparkdash-bench-") as tmp:
        log = Path(tmp) / "vllm.log"
        with vllm_server(log=log) as url:
            event_loop.run(_ours(url, tuple(dict.fromkeys(prompts[1])), tokens, 1))  # warm-up, unrecorded
            for c in LEVELS:
                try:
                    passes[str(c)] = [_pass(side, url, prompts[c], tokens, c, Path(tmp)) for side in order]
                except (RuntimeError, OSError, KeyError, ValueError, EngineError, httpx.HTTPError) as exc:
                    figures += _not_measured(c, f"{type(exc).__name__}: {exc}; engine log: {_tail(log)}")
                    continue
                figures += level_figures(c, passes[str(c)])
    return {"figures": figures, "tokens": tokens, "passes": _stored(passes)}


def _tail(log: Path, lines: int = 3) -> str:
    """The engine log's last lines, for a pass that failed."""
    return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])[-600:]


def _stored(passes: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The passes for the JSON report, each request's list of gaps left out (a hundred numbers each)."""
    return {c: [p | {"rows": [{k: v for k, v in r.items() if k != "itls"} for r in p["rows"]]} for p in level]
            for c, level in passes.items()}


def _not_measured(c: int, reason: str) -> list[dict[str, Any]]:
    names = [(f"{name} median", unit) for name, _, unit, _ in COMPARED] + [("output tok/s", "tok/s")]
    return [not_measured(f"{name}, c={c}: {OURS} vs {PEER}", unit, reason, f"within {GOAL:.0%}")
            for name, unit in names]


def _request(prompt: Prompt, tokens: int) -> GenerationRequest:
    return GenerationRequest(
        model="gemma", messages=prompt.messages(), max_tokens=tokens, extra={"ignore_eos": True}
    )


async def _ours(url: str, prompts: Sequence[Prompt], tokens: int, c: int) -> dict[str, Any]:
    """The prompts in order, at most `c` in flight, on SparkDash's vLLM client; per-request rows."""
    slots = asyncio.Semaphore(c)
    async with client_for("vllm", url) as client:

        async def one(i: int, prompt: Prompt) -> Any:
            async with slots:
                return await send(client, _request(prompt, tokens), f"request {i + 1} ({prompt.name})")

        gens = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    rows = []
    for gen in gens:
        m = request_metrics(gen)
        times = [chunk.t for chunk in gen.chunks if chunk.text]
        tpot = 1 / m["decode_tps_client"] if m["decode_tps_client"] else None
        rows.append(m | {"tpot_s": tpot, "itls": [b - a for a, b in itertools.pairwise(times)]})
    span = max(g.finished_at for g in gens) - min(g.sent_at for g in gens)
    return {"rows": rows, "output_tps": total_tps(gens), "tokens": sum(r["output_tokens"] for r in rows),
            "span_s": span}


def _theirs(url: str, prompts: Sequence[Prompt], tokens: int, c: int, workdir: Path) -> dict[str, Any]:
    result = run_vllm_bench(VLLM_PYTHON, url, VLLM_MODEL, prompts, tokens, c, workdir)
    return {"rows": per_request(result), "output_tps": result["output_throughput"],
            "tokens": result["total_output_tokens"], "span_s": result["duration"],
            "prompt_tokens": result["total_input_tokens"]}


def _pass(
    side: str, url: str, prompts: Sequence[Prompt], tokens: int, c: int, workdir: Path
) -> dict[str, Any]:
    """One side's pass over the prompts, with what the engine's counters say of it."""
    print(f"  c={c}: {side}, {len(prompts)} requests of {tokens} tokens", flush=True)
    before = _samples(url)
    if side == OURS:
        done = event_loop.run(_ours(url, prompts, tokens, c))
        done["prompt_tokens"] = sum(r["prompt_tokens"] for r in done["rows"])
    else:
        done = _theirs(url, prompts, tokens, c, workdir)
    after = _settled(url, before, len(prompts), len(prompts) * tokens)
    return done | {"side": side, "concurrency": c, "engine": engine_delta(before, after)}


def _samples(url: str) -> dict[str, float]:
    return parse_counters(httpx.get(f"{url}/metrics", timeout=10).text)


def _settled(url: str, before: dict[str, float], requests: int, tokens: int) -> dict[str, float]:
    """The counters once the pass's requests and tokens are all counted (they land just after)."""
    deadline = time.monotonic() + 5
    while True:
        after = _samples(url)
        delta = request_delta(before, after, VLLM)
        if delta is None or (delta.finished >= requests and delta.generated >= tokens):
            return after
        if time.monotonic() > deadline:
            raise RuntimeError(f"vLLM's counters did not count the pass: {delta}")
        time.sleep(0.05)


def _total(samples: dict[str, float], name: str) -> float:
    """A sample summed over its label sets (0 when absent)."""
    return sum(v for k, v in samples.items() if k == VLLM + name or k.startswith(VLLM + name + "{"))


def engine_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What vLLM's counters and histograms added across a pass: request and token counts, and the
    sums (seconds) of its TTFT (arrival to first token), ITL and request time (arrival to finish)."""
    names = {
        "requests": "e2e_request_latency_seconds_count", "e2e_s": "e2e_request_latency_seconds_sum",
        "ttft_s": "time_to_first_token_seconds_sum", "ttfts": "time_to_first_token_seconds_count",
        "itl_s": "inter_token_latency_seconds_sum", "itls": "inter_token_latency_seconds_count",
        "decode_s": "request_decode_time_seconds_sum", "prefill_s": "request_prefill_time_seconds_sum",
        "generated": "generation_tokens_total", "prompt_tokens": "prompt_tokens_total",
    }  # fmt: skip
    return {key: _total(after, name) - _total(before, name) for key, name in names.items()}


def _rows(passes: Sequence[dict[str, Any]], side: str) -> list[dict[str, Any]]:
    return [row for p in passes if p["side"] == side for row in p["rows"]]


def _median(rows: Sequence[dict[str, Any]], key: str) -> float:
    if key == "itls":
        return statistics.median(gap for r in rows for gap in r["itls"])
    return statistics.median(r[key] for r in rows if r[key] is not None)


def level_figures(c: int, passes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline medians, output tok/s, the prompts' sameness and the engine-side decomposition."""
    ours, theirs = _rows(passes, OURS), _rows(passes, PEER)
    m, p = _engine_means(passes, OURS), _engine_means(passes, PEER)
    out = []
    for name, key, unit, scale in COMPARED:
        mine, peer = scale * _median(ours, key), scale * _median(theirs, key)
        # Where the two differ, was it the engine? Its own mean for each side's requests, as a ratio.
        engine = "engine_ttft" if name == "TTFT" else "engine_itl"
        note = (f"{_NOTES[name]}; the engine's own mean for the same requests, ours / the peer's: "
                f"{m[engine] / p[engine]:.3f}")
        out.append(figure(f"{name} median, c={c}: {OURS} vs {PEER}", mine, unit, reference=peer,
                          reference_name=PEER, goal=f"within {GOAL:.0%}", met=abs(mine / peer - 1) <= GOAL,
                          note=note))
    mine, peer = (_pooled_tps(passes, side) for side in (OURS, PEER))
    out.append(figure(f"output tok/s, c={c}: {OURS} vs {PEER}", mine, "tok/s", reference=peer,
                      reference_name=PEER, goal=f"within {GOAL:.0%}", met=abs(mine / peer - 1) <= GOAL,
                      note="all output tokens / (last finish - first send) of each pass, pooled over passes"))
    out.append(_sameness(c, passes))
    return out + decomposition(c, passes)


_NOTES = {
    "TTFT": "ours: from our request's headers going out; vLLM's: from just before its POST",
    "TPOT": "ours: (last token - first token) / (tokens - 1), i.e. 1 / decode tok/s; vLLM's: "
            "(latency - TTFT) / (tokens - 1)",
    "ITL": "ours: gaps between text chunks; vLLM's also counts its role chunk to the first token",
}


def _pooled_tps(passes: Sequence[dict[str, Any]], side: str) -> float:
    mine = [p for p in passes if p["side"] == side]
    return sum(p["tokens"] for p in mine) / sum(p["span_s"] for p in mine)


def _sameness(c: int, passes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Prompt and output tokens per request, each side's own count (usage): the same work asked."""
    per = {}
    for side in (OURS, PEER):
        mine = [p for p in passes if p["side"] == side]
        per[side] = sum(p["prompt_tokens"] for p in mine) / sum(len(p["rows"]) for p in mine)
    outputs = {r["output_tokens"] for p in passes for r in p["rows"]}
    return figure(f"prompt tokens per request, c={c}: {OURS} vs {PEER}", per[OURS], "tokens",
                  reference=per[PEER], reference_name=PEER, met=per[OURS] == per[PEER] and len(outputs) == 1,
                  goal="equal", note=f"output tokens per request: {sorted(outputs)}")


def _engine_means(passes: Sequence[dict[str, Any]], side: str) -> dict[str, float]:
    """The engine's mean TTFT, ITL and request time (ms) for one side's requests, and the client's."""
    mine = [p for p in passes if p["side"] == side]
    e = {k: sum(p["engine"][k] for p in mine) for k in mine[0]["engine"]}
    rows = [r for p in mine for r in p["rows"]]
    itls = [gap for r in rows for gap in r["itls"]]
    return {
        "engine_ttft": 1000 * e["ttft_s"] / e["ttfts"], "engine_itl": 1000 * e["itl_s"] / e["itls"],
        "engine_e2e": 1000 * e["e2e_s"] / e["requests"],
        "ttft": 1000 * statistics.fmean(r["ttft_s"] for r in rows),
        "tpot": 1000 * statistics.fmean(r["tpot_s"] for r in rows if r["tpot_s"] is not None),
        "itl": 1000 * statistics.fmean(itls), "e2e": 1000 * statistics.fmean(r["e2e_s"] for r in rows),
    }  # fmt: skip


def decomposition(c: int, passes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each side against the engine's own figures for its requests (means, from /metrics): the
    engine's time for each side's requests (the same work should take the same time; where it did
    not, the box drifted between passes), each side's figure over the engine's for the same requests
    (drift cancels: goal within 2 %), and what each harness adds (HTTP, its own code, scheduling)."""
    m, p = _engine_means(passes, OURS), _engine_means(passes, PEER)
    out = [figure(f"{name} over the engine's, c={c}: {OURS} vs {PEER}", m[key] / m[engine], "x",
                  reference=p[key] / p[engine], reference_name=PEER, goal=f"within {GOAL:.0%}",
                  met=abs((m[key] / m[engine]) / (p[key] / p[engine]) - 1) <= GOAL, note=note)
           for name, key, engine, note in _OVER_ENGINE]
    rows: list[tuple[str, float | None, float | None, str]] = [
        ("engine TTFT mean, our requests vs the peer's", m["engine_ttft"], p["engine_ttft"],
         "vllm:time_to_first_token_seconds: arrival to first token"),
        ("engine ITL mean, our requests vs the peer's", m["engine_itl"], p["engine_itl"],
         "vllm:inter_token_latency_seconds"),
        ("TTFT mean minus engine TTFT", m["ttft"] - m["engine_ttft"], p["ttft"] - p["engine_ttft"],
         "what each harness adds to the engine's time to first token"),
        ("TPOT mean minus engine ITL", m["tpot"] - m["engine_itl"], p["tpot"] - p["engine_itl"],
         "what each harness adds per decoded token"),
        ("request time mean minus engine's", m["e2e"] - m["engine_e2e"], p["e2e"] - p["engine_e2e"],
         "what each harness adds to a request's time; ours ends at the stream's end ([DONE]), "
         "vLLM's at its last token"),
    ]
    if c == 1:
        rows.append(("time between requests mean", _between(passes, OURS), _between(passes, PEER),
                     "a pass's time outside its requests: counted in output tok/s, not in TTFT or TPOT"))
    return out + [figure(f"{name}, c={c}", mine, "ms", reference=peer, reference_name=PEER, note=note)
                  for name, mine, peer, note in rows]


# (figure, client mean, engine mean of the same requests, note)
_OVER_ENGINE = (
    ("TTFT mean", "ttft", "engine_ttft", "each side's mean TTFT / the engine's for its own requests"),
    ("TPOT mean", "tpot", "engine_itl", "each side's mean TPOT / the engine's mean ITL for its own requests"),
)


def _between(passes: Sequence[dict[str, Any]], side: str) -> float | None:
    """One at a time: the mean time (ms) from one request's end to the next one's start."""
    mine = [p for p in passes if p["side"] == side and len(p["rows"]) > 1]
    if not mine:
        return None
    idle = sum(p["span_s"] - sum(r["e2e_s"] for r in p["rows"]) for p in mine)
    return 1000 * idle / sum(len(p["rows"]) - 1 for p in mine)
