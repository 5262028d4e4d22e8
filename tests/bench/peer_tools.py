"""The peers `make bench-peers` races, each run as a process whose CPU time is read when it exits.

GuideLLM and llama-benchy are installed, pinned, into venvs of their own under
~/.cache/sparkdash/peers (once); `vllm bench serve` runs in the vLLM engine venv from `make engine`
(its module's own parser and main, as tests/bench/vllm_peer.py explains). A tool that cannot run
here is left out with the reason printed, never replaced.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx

from tests.bench.engine import VLLM_MODEL, VLLM_PYTHON
from tests.bench.peer_race import CORE
from tests.bench.vllm_peer import BENCH_MAIN

PEERS = Path(os.getenv("SPARKDASH_PEERS_DIR", Path.home() / ".cache" / "sparkdash" / "peers"))
PINNED = {"guidellm": ("guidellm==0.8.1",), "llama-benchy": ("llama-benchy==0.4.0",)}
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


@dataclass(frozen=True)
class Setup:
    """What every tool is given: the engine, its model name, the prompt, the answer length, a folder."""

    url: str
    model: str
    prompt: str
    tokens: int
    work: Path
    book: Path


@dataclass
class Done:
    """A finished tool run: the files it wrote (its result first) and its processes' CPU seconds."""

    files: list[Path]
    cpu_s: float
    note: str = ""
    argv: list[str] = field(default_factory=list)
    warmups: int = 0  # requests it sent before the measured ones (the engine logs them too)


Runner = Callable[[Setup, int, int], Done]


def ready(install: bool) -> dict[str, Runner]:
    """The tools that can run here, SparkDash first; each left-out one is printed with why."""
    tools: dict[str, Runner] = {CORE: run_sparkdash}
    if not (VLLM_PYTHON.exists() and (VLLM_MODEL / "config.json").exists()):
        print(
            "bench-peers: vllm bench serve left out: no vLLM venv and tokenizer "
            f"({VLLM_PYTHON}, {VLLM_MODEL})"
        )
    else:
        tools["vllm-bench"] = run_vllm
    for name, runner in (("guidellm", run_guidellm), ("llama-benchy", run_llama_benchy)):
        why = _venv(name, install)
        if why:
            print(f"bench-peers: {name} left out: {why}")
        elif name == "llama-benchy" and not (VLLM_MODEL / "tokenizer.json").exists():
            print(f"bench-peers: llama-benchy left out: it needs the model's tokenizer ({VLLM_MODEL})")
        else:
            tools[name] = runner
    return tools


def _venv(name: str, install: bool) -> str | None:
    python = PEERS / f"{name}-venv" / "bin" / "python"
    if python.exists():
        return None
    if not install:
        return f"not installed in {python.parent.parent}"
    print(f"installing {' '.join(PINNED[name])} into {python.parent.parent} (once)", flush=True)
    for argv in (
        [sys.executable, "-m", "venv", str(python.parent.parent)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINNED[name]],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            return f"`{' '.join(argv[-2:])}` failed: {(done.stderr or done.stdout).strip()[-200:]}"
    return None


def timed(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, log: Path | None = None
) -> tuple[float, str]:
    """Run argv to its end; its CPU seconds (user + system, its waited-for children included) and
    its standard output (kept in `log`, by default cwd/tool.log; its standard error beside it, .err).

    Raises RuntimeError with its last words when it fails."""
    log = log or cwd / "tool.log"
    err = log.with_suffix(".err")
    with log.open("wb") as out, err.open("wb") as errors:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=errors, env=os.environ | (env or {}))
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    output = log.read_text(errors="replace")
    if proc.returncode != 0:
        words = (output + err.read_text(errors="replace")).splitlines()[-3:]
        raise RuntimeError(f"{Path(argv[0]).name} exited {proc.returncode}: {' | '.join(words)}")
    return usage.ru_utime + usage.ru_stime, output


def _folder(setup: Setup, name: str, streams: int, requests: int) -> Path:
    folder = setup.work / f"{name}-c{streams}-n{requests}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_sparkdash(setup: Setup, streams: int, requests: int) -> Done:
    folder = _folder(setup, "sparkdash", streams, requests)
    out = folder / "summary.json"
    argv = [
        sys.executable,
        "-m",
        "tests.bench.peer_sparkdash",
        setup.url,
        str(streams),
        str(requests),
        str(setup.tokens),
        str(out),
    ]
    cpu, _ = timed(argv, Path.cwd(), log=folder / "tool.log")
    return Done([out], cpu, argv=argv)


def run_vllm(setup: Setup, streams: int, requests: int) -> Done:
    folder = _folder(setup, "vllm-bench", streams, requests)
    data, out = folder / "prompts.json", folder / "vllm-bench.json"
    rows = [{"conversations": [{"from": "human", "value": setup.prompt}, {"from": "gpt", "value": ""}]}]
    data.write_text(json.dumps(rows * requests, ensure_ascii=False))
    argv = [
        str(VLLM_PYTHON),
        "-c",
        BENCH_MAIN,
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        setup.url,
        "--model",
        str(VLLM_MODEL),
        "--served-model-name",
        setup.model,
        "--tokenizer",
        str(VLLM_MODEL),
        "--dataset-name",
        "sharegpt",
        "--dataset-path",
        str(data),
        "--disable-shuffle",
        "--num-prompts",
        str(requests),
        "--output-len",
        str(setup.tokens),
        "--ignore-eos",
        "--temperature",
        "0",
        "--max-concurrency",
        str(streams),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(folder),
        "--result-filename",
        out.name,
        "--disable-tqdm",
    ]
    cpu, _ = timed(argv, folder, OFFLINE)
    return Done([out], cpu, note="(sends one test request first)", argv=argv, warmups=1)


def run_guidellm(setup: Setup, streams: int, requests: int) -> Done:
    folder = _folder(setup, "guidellm", streams, requests)
    data, out = folder / "prompts.jsonl", folder / "benchmarks.json"
    row = json.dumps({"prompt": setup.prompt, "output_tokens_count": setup.tokens}, ensure_ascii=False)
    data.write_text((row + "\n") * requests)
    profile = "kind=synchronous" if streams == 1 else f"kind=concurrent,streams={streams}"
    argv = [
        str(PEERS / "guidellm-venv" / "bin" / "guidellm"),
        "run",
        "--backend",
        f"kind=openai_http,target={setup.url},request_format=/v1/chat/completions,"
        "extras.body.temperature=0,extras.body.seed=0",
        "--profile",
        profile,
        "--constraint",
        f"kind=max_requests,count={requests}",
        "--data",
        f"kind=json_file,path={data}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console-interactive",
    ]
    cpu, _ = timed(argv, folder, OFFLINE)
    return Done([out], cpu, argv=argv)


def run_llama_benchy(setup: Setup, streams: int, requests: int) -> Done:
    folder = _folder(setup, "llama-benchy", streams, requests)
    out = folder / "llama-benchy.json"
    prompt_tokens = len(
        httpx.post(f"{setup.url}/tokenize", json={"content": setup.prompt}, timeout=10).json()["tokens"]
    )
    with _served(setup.book) as book_url:
        argv = [
            str(PEERS / "llama-benchy-venv" / "bin" / "llama-benchy"),
            "--base-url",
            f"{setup.url}/v1",
            "--model",
            setup.model,
            "--tokenizer",
            str(VLLM_MODEL),
            "--book-url",
            book_url,
            "--pp",
            str(prompt_tokens),
            "--tg",
            str(setup.tokens),
            "--exact-tg",
            "--skip-coherence",
            "--no-warmup",
            "--runs",
            str(max(1, requests // streams)),
            "--concurrency",
            str(streams),
            "--format",
            "json",
            "--save-result",
            str(out),
        ]
        cpu, _ = timed(argv, folder, OFFLINE)
    return Done([out], cpu, note="(its own prompts of the same length, cut from a text)", argv=argv)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the base class names it
        pass


class _served:
    """A file served over HTTP on loopback while in the block (llama-benchy fetches its text by URL)."""

    def __init__(self, path: Path) -> None:
        handler = partial(_Quiet, directory=str(path.parent))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/{path.name}"

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
