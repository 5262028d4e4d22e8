"""`make bench-peers`: SparkDash and its peers against one real llama-server, the same prompts and lengths.

GuideLLM, llama-benchy (each in its own venv, pinned, installed once under ~/.cache/sparkdash/peers)
and `vllm bench serve` (the vLLM engine venv) run one after another against one llama-server
(Gemma 3 270M, 4 slots), at 1 and 4 requests in flight, as SparkDash's own measuring loop does (the
concurrency job's core, tests/bench/peer_sparkdash.py). Every tool sends the same prompt (SparkDash's
prose prompt; llama-benchy cuts prompts of the same token count from a text made of SparkDash's
prompts, as it always cuts from a book) for exactly TOKENS tokens. For each tool and level:

- decode tok/s: the tool's median over requests, as a ratio to the engine's own median over the same
  requests, from llama-server's "eval time" log lines written during that tool's run, read as
  (tokens - 1) / eval time: llama-server counts the token sampled at the end of the prompt among
  the N it generated but not in the time, so its own tokens-per-second is N / (N - 1) high, and every
  client (each counts N - 1 gaps from the first token) read 31/32 of it at 32 tokens;
- TTFT offset: the tool's median TTFT minus the engine's median prompt time over the same requests;
- CPU seconds per 1,000 generated tokens in the measuring loop: each tool runs twice, with N and
  N + EXTRA requests, and the CPU time (user + system, the tool's whole process tree) of the first is
  taken from the second's, so start-up (imports, tokenizer loads, warm-ups) cancels the same way for
  all; EXTRA is large (2,048 tokens) because a tool's start-up varies by a second or more.

Every tool's figures are read from the result file it wrote, through SparkDash's importers
(runs.core.imports), so the race also imports files the real tools just wrote; `--keep DIR` keeps
them. Goals: SparkDash's TTFT offset and its CPU per 1,000 tokens the smallest, each printed as a
ratio to the best peer's in the same run. Prints a table; writes var/bench-peers.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from runs.core.imports.detect import read_results
from runs.core.jobs.prompts import SPEED_PROMPTS, SYSTEM
from tests.bench import peer_tools
from tests.bench.engine import engine_missing, llama_server

STREAMS = (1, 4)
TOKENS = 32
EXTRA = 64  # requests added for the CPU difference (16 with --short)
EVAL = re.compile(r"\|\s+(prompt eval|eval) time =\s+([\d.]+) ms /\s+(\d+) tokens")


@dataclass
class Entry:
    """One tool at one level: its figures, the engine's over the same requests, its CPU cost."""

    tool: str
    streams: int
    decode_tps: float | None
    engine_decode_tps: float | None
    ttft_ms: float | None
    engine_prompt_ms: float | None
    cpu_s_per_1k: float | None
    note: str = ""

    @property
    def decode_ratio(self) -> float | None:
        return (
            self.decode_tps / self.engine_decode_tps if self.decode_tps and self.engine_decode_tps else None
        )

    @property
    def ttft_offset_ms(self) -> float | None:
        return (
            self.ttft_ms - self.engine_prompt_ms
            if self.ttft_ms is not None and self.engine_prompt_ms
            else None
        )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if why := engine_missing():
        print(f"bench-peers: {why}")
        return 1
    tools = peer_tools.ready(install=True)
    requests, extra = (4, 16) if args.short else (8, EXTRA)
    entries: list[Entry] = []
    with tempfile.TemporaryDirectory() as tmp, llama_server(parallel=4, log=Path(tmp) / "engine.log") as url:
        work = Path(tmp)
        setup = peer_tools.Setup(
            url=url,
            model=_served_model(url),
            prompt=_prompt_text(),
            tokens=TOKENS,
            work=work,
            book=work / "book.txt",
        )
        setup.book.write_text(" ".join(p.user for p in SPEED_PROMPTS * 40))
        for streams in STREAMS:
            for name, runner in tools.items():
                entries.append(
                    _race(name, runner, setup, streams, (requests, extra), work / "engine.log", args.keep)
                )
                print(_row(entries[-1]), flush=True)
    _print_table(entries)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            [
                asdict(e) | {"decode_ratio": e.decode_ratio, "ttft_offset_ms": e.ttft_offset_ms}
                for e in entries
            ],
            indent=1,
        )
    )
    print(f"figures written to {args.out}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.peers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="4 and 20 requests per run instead of 8 and 72")
    parser.add_argument("--keep", type=Path, help="keep each tool's result files here (test data)")
    parser.add_argument("--out", default="var/bench-peers.json")
    return parser


def _served_model(url: str) -> str:
    return str(httpx.get(f"{url}/v1/models", timeout=10).json()["data"][0]["id"])


def _prompt_text() -> str:
    prose = SPEED_PROMPTS[4]  # the concurrency job's prompt: free prose, answers of any length
    return f"{SYSTEM}\n\n{prose.user}"


def _race(
    name: str,
    runner: Callable[..., peer_tools.Done],
    setup: peer_tools.Setup,
    streams: int,
    sizes: tuple[int, int],
    log: Path,
    keep: Path | None,
) -> Entry:
    """The tool at `streams`: N requests (its figures and the engine's), then N + EXTRA (the CPU
    difference)."""
    requests, extra = sizes
    start = log.stat().st_size
    small = runner(setup, streams, requests)
    engine = _engine_figures(log, start)
    large = runner(setup, streams, requests + extra)
    cpu = (large.cpu_s - small.cpu_s) / (extra * TOKENS / 1000)
    figures = _figures(name, small)
    if keep:
        target = keep / name / f"c{streams}"
        target.mkdir(parents=True, exist_ok=True)
        for path in small.files:
            shutil.copy(path, target / path.name)
    return Entry(
        name,
        streams,
        figures.get("decode"),
        engine.get("decode"),
        figures.get("ttft_ms"),
        engine.get("prompt_ms"),
        round(cpu, 3),
        small.note,
    )


def _figures(name: str, done: peer_tools.Done) -> dict[str, float]:
    """The tool's median decode tok/s and TTFT from its own file, read by SparkDash's importers."""
    if name == "sparkdash":
        level = json.loads(done.files[0].read_text())["levels"]
        (figures,) = level.values()
    else:
        (level,) = read_results(done.files[0].name, done.files[0].read_bytes()).levels[-1:]
        figures = level.figures
    ttft, decode = figures.get("ttft_s"), figures.get("decode_tps_client")
    return {
        "ttft_ms": ttft["median"] * 1000 if ttft else None,
        "decode": decode["median"] if decode else None,
    }


def _engine_figures(log: Path, start: int) -> dict[str, float]:
    """The engine's own median prompt time (ms) and decode tok/s over the requests logged since `start`."""
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    prompt, decode = [], []
    for kind, ms, tokens in EVAL.findall(text):
        if kind == "prompt eval":
            prompt.append(float(ms))
        elif float(ms) > 0 and int(tokens) > 1:
            decode.append((int(tokens) - 1) * 1000 / float(ms))
    return {
        "prompt_ms": statistics.median(prompt) if prompt else None,
        "decode": statistics.median(decode) if decode else None,
    }


def _row(e: Entry) -> str:
    def num(value: float | None, fmt: str) -> str:
        return format(value, fmt) if value is not None else "—"

    return (
        f"{e.tool:14} {e.streams:>3}  decode {num(e.decode_tps, '8.2f')} / engine "
        f"{num(e.engine_decode_tps, '8.2f')}"
        f" = {num(e.decode_ratio, '6.3f')}  TTFT {num(e.ttft_ms, '8.1f')} ms - engine prompt "
        f"{num(e.engine_prompt_ms, '7.1f')} ms = {num(e.ttft_offset_ms, '+7.1f')} ms  CPU "
        f"{num(e.cpu_s_per_1k, '7.3f')} s/1k tokens {e.note}"
    )


def _print_table(entries: list[Entry]) -> None:
    print("\n== same-run race (each goal as SparkDash / best peer; <= 1 meets it)")
    for streams in STREAMS:
        level = [e for e in entries if e.streams == streams]
        ours = next((e for e in level if e.tool == "sparkdash"), None)
        peers = [e for e in level if e.tool != "sparkdash"]
        for what, read in (
            ("TTFT offset", lambda e: e.ttft_offset_ms),
            ("CPU per 1k tokens", lambda e: e.cpu_s_per_1k),
        ):
            values = [v for e in peers if (v := read(e)) is not None]
            if ours is None or read(ours) is None or not values:
                print(f"{streams} stream(s), {what}: not measured")
                continue
            best = min(values, key=abs) if what == "TTFT offset" else min(values)
            ratio = abs(read(ours)) / abs(best) if best else float("inf")
            print(
                f"{streams} stream(s), {what}: SparkDash {read(ours):.3f}, best peer {best:.3f}, "
                f"ratio {ratio:.2f}"
                f" ({'met' if ratio <= 1 else 'not met'})"
            )


if __name__ == "__main__":
    sys.exit(main())
