"""The real llama-server from `make engine`, started for a benchmark under the shared engine lock."""
from __future__ import annotations

import fcntl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.processes import stop_process
from tests.real_engine import GEMMA_270M, LLAMA_SERVER, free_port

LOCK = Path("/tmp/sparkdash-engine.lock")


def engine_missing() -> str | None:
    """Why the real engine cannot be used, or None when it can."""
    if LLAMA_SERVER.exists() and GEMMA_270M.exists():
        return None
    return f"no llama-server/model in {LLAMA_SERVER.parent.parent} (run `make engine`)"


@contextmanager
def llama_server(parallel: int = 1, log: Path | None = None) -> Iterator[str]:
    """Hold the engine lock (other real-engine users wait) and serve Gemma 3 270M; yield its URL."""
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = free_port()
        argv = [str(LLAMA_SERVER), "-m", str(GEMMA_270M), "--host", "127.0.0.1", "--port", str(port),
                "-t", "2", "-np", str(parallel), "-c", str(4096 * parallel)]
        out = log.open("w") if log else subprocess.DEVNULL
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc)
            yield url
        finally:
            stop_process(proc)


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited ({proc.returncode}) before it was healthy")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"llama-server at {url} was not healthy after {timeout_s:g} s")
