"""Where a chunk's microseconds go: py-spy samples of the harness streaming from the simulator process.

`python -m tests.bench.chunk_profile PY_SPY` runs the overhead benchmark's three loads (1 token a
chunk at 1 and 16 streams, 8 tokens a chunk at 16) under `PY_SPY record --gil --nonblocking`, each
after an untimed warm-up job, and prints one markdown table: the harness's CPU per chunk, measured
in the profiled process, its system time as the kernel's row and its user time split over the
stages of a chunk's path by the share of samples whose deepest frame belongs to each stage.
py-spy is no dependency of the project (`pip download py-spy`, unpack the wheel, pass its
`py-spy` binary); README, "Where a chunk's microseconds go".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from measure import event_loop
from tests.bench.overhead import Case, _run_job
from tests.bench.simproc import ROOT, simulator_process

KERNEL = "kernel: system calls (socket reads, epoll)"
LOADS = {"1x1": Case(1, 1, 4000, 4), "1x16": Case(1, 16, 2000, 2), "8x16": Case(8, 16, 8000, 2)}
# Checked from a sample's deepest frame up; the first stage one of its frames matches is the sample's.
STAGES = (
    ("level summary: bootstrap intervals (once a level)", r"\(measure/stats\.py|\(random\.py"),
    ("read and HTTP framing: event loop, socket, httpx stack", r"\((asyncio/|selectors\.py|socket\.py|httpx|"
     r"httpcore|h11|anyio|sniffio|ssl\.py)|_run_once|Arrivals"),
    ("HTTP framing: de-chunking (engines.clients.wire)", r"(Dechunker|_Counted|WireBody)\.\w+ "
     r"\(engines/clients/wire"),
    ("split into lines, UTF-8 decode", r"bounded_lines|LineSplitter|_utf8_lines|decode \(|"
     r"_split \(engines/clients/(base|wire)"),
    ("SSE field", r"_sse_data|sse_object \("),
    ("JSON parse", r"load_json_object|orjson|\(json/|_stdlib_json|raise_reported_error"),
    ("delta to chunks (take, think tags, Chunk)", r"take \(|_take_spec|ThinkSplitter|"
     r"_split \(engines/clients/reas|__init__ \(<string>"),
    ("generators between read and chunk", r"(stream|sse_objects|stream_lines|_wire_lines|_httpx_lines|"
     r"_stream_lines) \(engines/"),
    ("progress", r"on_sample|_Count"),
    ("bookkeeping: generate, request figures, job loop", r"\((engines/|runs/|measure/)"),
)  # fmt: skip


def main(argv: list[str]) -> None:
    """Profile each load with the given py-spy binary and print the table; or `--load NAME OUT` (one load)."""
    if argv[0] == "--load":
        _profiled_load(argv[1], Path(argv[2]))
        return
    columns = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in LOADS:
            out = Path(tmp) / f"{name}.txt"
            command = [sys.executable, "-m", "tests.bench.chunk_profile", "--load", name, str(out)]
            spy = [argv[0], "record", "--gil", "--nonblocking", "-r", "2000", "-f", "raw", "-o", str(out)]
            spy.append("--")
            subprocess.run(spy + command, cwd=ROOT, check=True, capture_output=True)
            user_us, system_us = map(float, Path(f"{out}.us").read_text().split())
            columns[name] = stages(out.read_text(), user_us)
            columns[name] |= {KERNEL: system_us, "total": user_us + system_us}
    print("| stage | " + " | ".join(columns) + " |\n| --- |" + " --- |" * len(columns))
    for stage in [KERNEL] + [name for name, _ in STAGES] + ["other", "total"]:
        print(f"| {stage} | " + " | ".join(f"{c.get(stage, 0.0):.1f}" for c in columns.values()) + " |")


def _profiled_load(name: str, out: Path) -> None:
    case = LOADS[name]
    with simulator_process(case.profile()) as sim:
        event_loop.run(_run_job(sim.url, Case(case.per_chunk, 1, 64, 1)))  # imports, set-up: not profiled
        before, tokens = os.times(), 0
        for _ in range(3):
            tokens += measured(sim.url, case)
        after, chunks = os.times(), tokens / case.per_chunk
        user, system = after.user - before.user, after.system - before.system
        Path(f"{out}.us").write_text(f"{1e6 * user / chunks} {1e6 * system / chunks}")


def measured(url: str, case: Case) -> int:
    """The profiled job (its name marks the samples that count)."""
    return event_loop.run(_run_job(url, case))


def stages(raw: str, us_per_chunk: float) -> dict[str, float]:
    """µs per chunk of each stage: the user CPU per chunk, shared out by py-spy's raw (collapsed)
    samples of `measured` holding the GIL (the kernel's time, in system calls, is a row of its own)."""
    counts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if any("measured (" in f for f in frames):
            counts[_stage(frames)] += int(n)
    total = sum(counts.values()) or 1
    return {name: us_per_chunk * n / total for name, n in counts.items()}


def _stage(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, pattern in STAGES:
            if re.search(pattern, frame):
                return name
    return "other"


if __name__ == "__main__":
    main(sys.argv[1:])
