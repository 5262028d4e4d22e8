"""The real engines from `make engine`, started for a benchmark under the shared engine lock.

llama-server and the Gemma 3 270M GGUF (bin/build-engine); vLLM's CPU build and that model
converted for it (bin/build-vllm, x86_64 only). SPARKDASH_VLLM_PYTHON and SPARKDASH_VLLM_MODEL
point at another vLLM venv's python and model folder.
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from tests.processes import stop_process
from tests.real_engine import CACHE, GEMMA_270M, LLAMA_SERVER, free_port

LOCK = Path("/tmp/sparkdash-engine.lock")
VLLM_PYTHON = Path(os.getenv("SPARKDASH_VLLM_PYTHON", CACHE / "vllm" / "venv" / "bin" / "python"))
VLLM_MODEL = Path(os.getenv("SPARKDASH_VLLM_MODEL", CACHE / "models" / "gemma3-270m-hf"))
# bin/build-vllm writes .converted last; a folder named in SPARKDASH_VLLM_MODEL needs its config only.
VLLM_MODEL_READY = VLLM_MODEL / ("config.json" if os.getenv("SPARKDASH_VLLM_MODEL") else ".converted")
# What bin/build-vllm's `vllm` launcher sets: offline, no usage reports, 1 GiB of KV cache, loopback.
VLLM_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_HOST_IP": "127.0.0.1"}
VLLM_READY_S = 600  # about 100 s on an idle 2-core box; much longer beside a build


def engine_missing() -> str | None:
    """Why the real engine cannot be used, or None when it can."""
    if LLAMA_SERVER.exists() and GEMMA_270M.exists():
        return None
    return f"no llama-server/model in {LLAMA_SERVER.parent.parent} (run `make engine`)"


@contextmanager
def llama_server(parallel: int = 1, log: Path | None = None, threads: int = 2) -> Iterator[str]:
    """Hold the engine lock (other real-engine users wait) and serve Gemma 3 270M with `parallel`
    slots and `threads` threads; yield its URL."""
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = free_port()
        argv = [str(LLAMA_SERVER), "-m", str(GEMMA_270M), "--host", "127.0.0.1", "--port", str(port),
                "-t", str(threads), "-np", str(parallel), "-c", str(4096 * parallel)]
        out = log.open("w") if log else subprocess.DEVNULL
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc)
            yield url
        finally:
            stop_process(proc)


def vllm_missing() -> str | None:
    """Why the vLLM engine cannot be used, or None when it can."""
    if VLLM_PYTHON.exists() and VLLM_MODEL_READY.exists():
        return None
    return f"no vLLM venv/model ({VLLM_PYTHON}, {VLLM_MODEL_READY}): run `make engine` (x86_64 only)"


@contextmanager
def vllm_server(name: str = "gemma", log: Path | None = None) -> Iterator[str]:
    """Hold the engine lock and serve the converted Gemma 3 270M on vLLM (as `vllm serve` would,
    started the way bin/build-vllm's launcher starts it); yield its URL."""
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = free_port()
        argv = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(VLLM_MODEL),
                "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port),
                "--dtype", "bfloat16", "--max-model-len", "2048", "--enforce-eager",
                # the model in the engine core's process: no worker process (ready in half the time)
                "--distributed-executor-backend", "uni"]
        out = log.open("w") if log else subprocess.DEVNULL
        # Its own session: the engine core is a child process, stopped with it (killpg below).
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=os.environ | VLLM_ENV,
                                start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc, VLLM_READY_S, "vLLM")
            yield url
        finally:
            stop_process(proc, timeout_s=30)
            _kill_group(proc.pid)


def _kill_group(pgid: int) -> None:
    """SIGKILL what is left of a process group we started (an engine core its server left behind)."""
    with suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _wait_healthy(
    url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120, what: str = "llama-server"
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}) before it was healthy")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} at {url} was not healthy after {timeout_s:g} s")
