"""`make bench-peers`: SparkDash and its peers against one real llama-server, the same prompts and lengths.

GuideLLM, llama-benchy (each in its own venv, pinned, installed once under ~/.cache/sparkdash/peers)
and `vllm bench serve` (the vLLM engine venv) run one after another against one llama-server
(Gemma 3 270M, 16 slots), at 1, 4 and 16 requests in flight, and so does SparkDash, twice: as a
user runs it (`SparkDash (worker)`: `manage.py bench` through the in-process worker, samples
stored in SQLite, live updates on the channel layer; tests/bench/peer_worker.py) and its measuring
loop alone (`SparkDash (core)`: the concurrency job's core, no Django; tests/bench/peer_sparkdash.py).
Every tool sends the same prompt (SparkDash's prose prompt; llama-benchy cuts prompts of the same
token count from a text made of SparkDash's prompts, as it always cuts from a book) for exactly
TOKENS tokens. For each tool and level:

- decode tok/s: the tool's median over requests, as a ratio to the engine's own median over the same
  requests, from llama-server's "eval time" log lines written during that tool's run, read as
  (tokens - 1) / eval time: llama-server counts the token sampled at the end of the prompt among
  the N it generated but not in the time, so its own tokens-per-second is N / (N - 1) high, and every
  client (each counts N - 1 gaps from the first token) read 31/32 of it at 32 tokens;
- TTFT offset: the tool's median TTFT minus the engine's median prompt time over the same requests
  (a tool's warm-up requests, sent first, are left out of the engine's). Every tool's runs at a
  level start on cold slots (tests/bench/peer_slots.py), whoever ran before;
- CPU seconds per 1,000 generated tokens: each tool runs twice, with N and N + EXTRA requests, and
  the CPU time (user + system, the tool's whole process tree, from os.wait4) of the first is taken
  from the second's, so start-up (imports, Django, tokenizer loads, warm-ups) cancels the same way
  for all. A difference that is not positive is measured once more with RETRY_FACTOR x EXTRA
  requests; if that one is not positive either, it is printed as no figure (tests/bench/peer_race.py).

EXTRA is sized against start-up noise measured on this 2-core box while it was busy (load 7 to
10): the same 4-request run repeated spent CPU seconds ranging over 1.5 s for the worker (Django's
start-up; 2.7 to 4.2 s), 0.18 s for the core (0.42 to 0.60 s), while `vllm bench serve` spent 12 s
on start-up alone, so a few per cent of it is several tenths of a second (the run that printed
-0.143 s per 1,000 tokens had 2,048 extra tokens). EXTRA = 96 requests of 32 tokens (3,072 tokens)
costs the worker about 3 s (twice its start-up range) and the lightest peers about 1 s, which is
what a busy box's time allowed, not yet "dwarfs" for vLLM's start-up: a difference that is not
positive is measured once more with RETRY_FACTOR x EXTRA, and with --repeat the race prints each
tool's start-up range next to what its extra requests cost; a tool's figures at a level where the
range is the larger are noise, and are left out of the CPU goal.
--short's 32 extra requests (1,024 tokens) are for a quick look. At 16 streams the extra requests
are 384 (EXTRA_AT): in the race of December 7 2026 the worker's 96 extra requests there cost 0.3 s
while its N + EXTRA runs' CPU moved by 0.4 s between repeats, and one difference came out negative.

`--repeat K` runs the race K times on the same engine and closes with, per level and goal, the
median over repeats of SparkDash's (worker) ratio to the best peer, or "not separable" when either
tool's figure spread across repeats more than the two differ. Every tool's figures are read from
the result file it wrote, through SparkDash's importers (runs.core.imports), so the race also
imports files the real tools just wrote; `--keep DIR` keeps them. Goals: SparkDash's TTFT offset
and its CPU per 1,000 tokens the smallest, each a ratio to the best peer's in the same run.
Prints a table; writes var/bench-peers.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from runs.core.imports.detect import read_results
from runs.core.jobs.prompts import SPEED_PROMPTS, SYSTEM
from tests.bench import peer_race, peer_slots, peer_tools, peer_worker
from tests.bench.engine import engine_missing, llama_server

STREAMS = (1, 4, 16)
TOKENS = 32
EXTRA = 96  # requests added for the CPU difference (32 with --short); a multiple of every level
# At 16 streams each token costs the lightest tools a third of what it costs at one stream, so 96 extra
# requests were within start-up noise there (the worker's difference came out negative once): four
# times as many. A multiple of 16.
EXTRA_AT = {16: 4 * EXTRA}
# A difference that is not positive is measured once more with this many times the extra requests
# (whole rounds the worker can send at every level: tests/runs/test_bench_peer_race.py).
RETRY_FACTOR = 2
ENGINE_THREADS = 1  # see --engine-threads
EVAL = re.compile(r"\|\s+(prompt eval|eval) time =\s+([\d.]+) ms /\s+(\d+) tokens")


@dataclass
class Entry:
    """One tool at one level in one repeat: its figures, the engine's over the same requests, its CPU."""

    tool: str
    streams: int
    decode_tps: float | None
    engine_decode_tps: float | None
    ttft_ms: float | None
    engine_prompt_ms: float | None
    cpu_s_per_1k: float | None
    note: str = ""
    repeat: int = 1
    cpu_s: tuple[float, float] = (0.0, 0.0)  # the N and N + EXTRA runs' CPU seconds

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
    tools = {peer_race.WORKER: peer_worker.run_worker} | peer_tools.ready(install=True)
    entries: list[Entry] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        llama_server(parallel=max(STREAMS), log=Path(tmp) / "engine.log", threads=args.engine_threads) as url,
    ):
        setup = _setup(url, Path(tmp))
        peer_worker.prepare(setup)  # once: migrations and the config, outside every CPU figure
        for repeat in range(1, args.repeat + 1):
            for streams in STREAMS:
                sizes = (_requests(streams, args.short), extra_requests(streams, args.short))
                for name, runner in tools.items():
                    entry = _race(name, runner, setup, streams, sizes, args.keep)
                    entry.repeat = repeat
                    entries.append(entry)
                    print(_row(entry), flush=True)
    lines = _print_table(entries)
    _write(Path(args.out), entries, lines)
    print(f"figures written to {args.out}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.peers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="4 requests (16 at 16 streams) and 32 extra")
    parser.add_argument("--repeat", type=int, default=1, help="run the race this many times; medians")
    parser.add_argument(
        "--engine-threads",
        type=int,
        default=ENGINE_THREADS,
        help="llama-server's -t: 1 by default, as 2 spin-waiting threads on a busy 2-core box made "
        "it ten times slower (1.5 against 16 tok/s, measured)",
    )
    parser.add_argument("--keep", type=Path, help="keep each tool's result files here (test data)")
    parser.add_argument("--out", default="var/bench-peers.json")
    return parser


def extra_requests(streams: int, short: bool) -> int:
    """N + EXTRA's EXTRA at `streams`: 32 with --short, EXTRA_AT's where it names the level, else EXTRA."""
    return 32 if short else EXTRA_AT.get(streams, EXTRA)


def cpu_difference(
    runner: peer_tools.Runner,
    setup: peer_tools.Setup,
    streams: int,
    sizes: tuple[int, int],
    small: peer_tools.Done,
) -> tuple[peer_tools.Done, float | None, bool]:
    """(the larger run, CPU s per 1,000 tokens from it and `small`, whether it was the retry).

    A difference that is not positive (the tool's start-up moved more than EXTRA requests cost) is
    measured once more with RETRY_FACTOR x EXTRA requests against the same N run, so a tool whose
    start-up is noisy (vllm bench's 12 s of CPU) still gets a figure; if that one is not positive
    either, there is none.
    """
    requests, extra = sizes
    large = runner(setup, streams, requests + extra)
    cpu = peer_race.cpu_per_1k(small.cpu_s, large.cpu_s, extra * TOKENS)
    if cpu is not None:
        return large, cpu, False
    extra *= RETRY_FACTOR
    large = runner(setup, streams, requests + extra)
    return large, peer_race.cpu_per_1k(small.cpu_s, large.cpu_s, extra * TOKENS), True


def _requests(streams: int, short: bool) -> int:
    """N: the requests whose figures a tool reports; whole rounds, at least one."""
    return max(streams, 4 if short else 8)


def _setup(url: str, work: Path) -> peer_tools.Setup:
    setup = peer_tools.Setup(
        url=url,
        model=_served_model(url),
        prompt=_prompt_text(),
        tokens=TOKENS,
        work=work,
        book=work / "book.txt",
    )
    setup.book.write_text(" ".join(p.user for p in SPEED_PROMPTS * 40))
    return setup


def _served_model(url: str) -> str:
    return str(httpx.get(f"{url}/v1/models", timeout=10).json()["data"][0]["id"])


def _prompt_text() -> str:
    prose = SPEED_PROMPTS[4]  # the concurrency job's prompt: free prose, answers of any length
    return f"{SYSTEM}\n\n{prose.user}"


def _race(
    name: str,
    runner: peer_tools.Runner,
    setup: peer_tools.Setup,
    streams: int,
    sizes: tuple[int, int],
    keep: Path | None,
) -> Entry:
    """The tool at `streams`: N requests (its figures and the engine's), then N + EXTRA (the CPU
    difference)."""
    requests, extra = sizes
    log = setup.work / "engine.log"
    peer_slots.cool(setup.url, log, max(STREAMS))
    start = log.stat().st_size
    small = runner(setup, streams, requests)
    engine = _engine_figures(log, start, small.warmups)
    large, cpu, retried = cpu_difference(runner, setup, streams, (requests, extra), small)
    figures = _figures(name, small)
    if keep:
        target = keep / name / f"c{streams}"
        target.mkdir(parents=True, exist_ok=True)
        for path in small.files:
            shutil.copy(path, target / path.name)
    note = small.note if cpu is not None else f"{small.note} (CPU difference not positive: no figure)"
    if retried:
        note += f" (CPU from N + {RETRY_FACTOR} x EXTRA: the first difference was not positive)"
    return Entry(
        name,
        streams,
        figures.get("decode"),
        engine.get("decode"),
        figures.get("ttft_ms"),
        engine.get("prompt_ms"),
        round(cpu, 3) if cpu is not None else None,
        note.strip(),
        cpu_s=(round(small.cpu_s, 3), round(large.cpu_s, 3)),
    )


def _figures(name: str, done: peer_tools.Done) -> dict[str, float]:
    """The tool's median decode tok/s and TTFT from its own file, read by SparkDash's importers."""
    if name == peer_race.CORE:
        (figures,) = json.loads(done.files[0].read_text())["levels"].values()
    elif name == peer_race.WORKER:
        (figures,) = json.loads(done.files[0].read_text())["summary"]["levels"].values()
    else:
        (level,) = read_results(done.files[0].name, done.files[0].read_bytes()).levels[-1:]
        figures = level.figures
    ttft, decode = figures.get("ttft_s"), figures.get("decode_tps_client")
    return {
        "ttft_ms": ttft["median"] * 1000 if ttft else None,
        "decode": decode["median"] if decode else None,
    }


def _engine_figures(log: Path, start: int, skip: int = 0) -> dict[str, float]:
    """The engine's own median prompt time (ms) and decode tok/s over the requests logged since
    `start`, the first `skip` (a tool's warm-ups) left out."""
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    prompt, decode = [], []
    for kind, ms, tokens in EVAL.findall(text):
        if kind == "prompt eval":
            prompt.append(float(ms))
        elif float(ms) > 0 and int(tokens) > 1:
            decode.append((int(tokens) - 1) * 1000 / float(ms))
    prompt, decode = prompt[skip:], decode[skip:]
    return {
        "prompt_ms": statistics.median(prompt) if prompt else None,
        "decode": statistics.median(decode) if decode else None,
    }


def _row(e: Entry) -> str:
    def num(value: float | None, fmt: str) -> str:
        return format(value, fmt) if value is not None else "—"

    return (
        f"#{e.repeat} {e.tool:18} {e.streams:>3}  decode {num(e.decode_tps, '8.2f')} / engine "
        f"{num(e.engine_decode_tps, '8.2f')}"
        f" = {num(e.decode_ratio, '6.3f')}  TTFT {num(e.ttft_ms, '8.1f')} ms - engine prompt "
        f"{num(e.engine_prompt_ms, '7.1f')} ms = {num(e.ttft_offset_ms, '+7.1f')} ms  CPU "
        f"{num(e.cpu_s_per_1k, '7.3f')} s/1k tokens (N {e.cpu_s[0]:.2f} s, N+EXTRA {e.cpu_s[1]:.2f} s) "
        f"{e.note}"
    )


# (what, its figure, compared by size, whether noise-sized CPU figures are left out of it)
GOALS = (
    ("TTFT offset", lambda e: e.ttft_offset_ms, True, False),
    ("CPU per 1k tokens", lambda e: e.cpu_s_per_1k, False, True),
)


@dataclass(frozen=True)
class Noise:
    """A tool's start-up noise at a level: its N runs' CPU range across repeats (s), against the
    median of what its extra requests cost (N + EXTRA minus N, s)."""

    noise_s: float
    extra_s: float

    @property
    def noise_sized(self) -> bool:
        """Whether the extra requests cost no more than start-up moved: no CPU figure stands."""
        return self.noise_s >= self.extra_s


def start_up_noise(entries: list[Entry]) -> dict[tuple[str, int], Noise]:
    """Per (tool, level) measured in two repeats or more, its start-up noise; nothing for one repeat."""
    found = {}
    for streams in STREAMS:
        for tool in dict.fromkeys(e.tool for e in entries):
            runs = [e.cpu_s for e in entries if e.tool == tool and e.streams == streams]
            if len(runs) >= 2:
                noise = max(r[0] for r in runs) - min(r[0] for r in runs)
                found[(tool, streams)] = Noise(noise, statistics.median(r[1] - r[0] for r in runs))
    return found


def _print_table(entries: list[Entry]) -> list[str]:
    """The closing lines: per level and goal, the worker row against the best peer, over repeats.

    A tool's CPU figures at a level whose start-up noise was not smaller than what its extra
    requests cost (`start_up_noise`) are left out of the CPU goal, SparkDash's rows as any peer's:
    a figure of that size is noise, and the smallest noise would otherwise read as the best peer.
    """
    repeats = sorted({e.repeat for e in entries})
    noise = start_up_noise(entries)
    _print_noise(noise)
    noisy = {key for key, found in noise.items() if found.noise_sized}
    lines = []
    print("\n== same-run race (each goal as SparkDash (worker) / best peer; <= 1 meets it)")
    for streams in STREAMS:
        for what, read, by_size, noise_out in GOALS:
            ours, peers = [], []
            for r in repeats:
                level = [e for e in entries if e.streams == streams and e.repeat == r]
                if noise_out:
                    level = [e for e in level if (e.tool, streams) not in noisy]
                ours.append(next((read(e) for e in level if e.tool == peer_race.RACED), None))
                peers.append([read(e) for e in level if e.tool not in peer_race.OURS])
            verdict = peer_race.verdict(ours, peers, by_size)
            lines.append(
                verdict.line(streams, what) if verdict else f"{streams} stream(s), {what}: not measured"
            )
            print(lines[-1])
    return lines


def _print_noise(noise: dict[tuple[str, int], Noise]) -> None:
    """Per tool and level over repeats: the N runs' CPU range (start-up noise) against what the
    extra requests cost (the median N + EXTRA minus N): the CPU figure stands while the first is
    the smaller, and is left out of the race otherwise."""
    if not noise:
        return
    print("\n== start-up noise: the N runs' CPU range across repeats, against the extra requests' CPU")
    for (tool, streams), found in noise.items():
        left_out = "  (noise-sized: left out of the CPU goal)" if found.noise_sized else ""
        print(f"{tool:18} {streams:>3}  noise {found.noise_s:6.2f} s  extra {found.extra_s:6.2f} s{left_out}")


def _write(out: Path, entries: list[Entry], lines: list[str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [asdict(e) | {"decode_ratio": e.decode_ratio, "ttft_offset_ms": e.ttft_offset_ms} for e in entries]
    out.write_text(json.dumps({"entries": rows, "race": lines}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
