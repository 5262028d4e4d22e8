"""Where `make engine` put the real engines (llama-server and its Gemma 3 270M GGUF; vLLM's and
SGLang's CPU builds and the same model converted for them), for real-engine tests."""
from __future__ import annotations

import os
import random
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.processes import stop_process

CACHE = Path(os.getenv("SPARKDASH_ENGINE_CACHE", Path.home() / ".cache" / "sparkdash" / "engine"))
LLAMA_SERVER = CACHE / "bin" / "llama-server"
GEMMA_270M = CACHE / "models" / "gemma3-270m-q4_k_m.gguf"

requires_engine = pytest.mark.skipif(
    not (LLAMA_SERVER.exists() and GEMMA_270M.exists()),
    reason=f"no llama-server/model in {CACHE}: run `make engine` (make test does)",
)


# Not the random module's own generator: a test that seeds it would make both passes draw alike.
_PORTS = random.SystemRandom()


def free_port() -> int:
    """A port nothing listens on now, for a server a test starts later, drawn at random from the
    12,000 ports below the kernel's ephemeral range.

    Not one the kernel hands out itself: it gives ports of that range to every outgoing
    connection too, so between this call and the server's start a connection of this process or
    of another (CI runs two test passes side by side) could hold it, and the engine's start would
    wait for it, then fail.
    """
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    low = max(1024, first_ephemeral - 12_000)
    for _ in range(200):
        port = _PORTS.randrange(low, first_ephemeral)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{first_ephemeral - 1}")


VLLM = CACHE / "bin" / "vllm"  # bin/build-vllm's launcher: `vllm serve MODEL ...`
VLLM_MODEL = CACHE / "models" / "gemma3-270m-hf"
# What a real-vLLM config adds on this CPU: bf16 weights, no graph compilation (51 s to ready, not 146).
VLLM_CPU_FLAGS = "--dtype bfloat16 --enforce-eager --distributed-executor-backend uni"

# The vLLM and SGLang tests also carry the `engines` marker: `make test-engines` runs them.
requires_vllm = pytest.mark.skipif(
    not (VLLM.exists() and (VLLM_MODEL / ".converted").exists()),
    reason=f"no vLLM CPU build/model in {CACHE}: run `make engine` (make test-engines does; x86_64 only)",
)

SGLANG = CACHE / "bin" / "sglang"  # bin/build-sglang's launcher: its venv's python, `-m sglang.launch_server`
# What a real-SGLang config adds on this CPU (torch attention; the kernel helpers are bin/sglang-cpu's
# stand-ins, which verify chain drafts only: NGRAM breadth 1), and an idle scheduler that sleeps.
SGLANG_CPU_FLAGS = (
    "--device cpu --attention-backend torch_native --disable-overlap-schedule --dtype bfloat16 "
    "--max-total-tokens 16384 --sleep-on-idle --speculative-ngram-max-bfs-breadth 1"
)
requires_sglang = pytest.mark.skipif(
    not (SGLANG.exists() and (VLLM_MODEL / ".converted").exists()),
    reason=f"no SGLang CPU build/model in {CACHE}: run `make engine` (make test-engines does; x86_64 only)",
)


# One thread per llama-server in the tests: llama.cpp's threads spin while they wait for each other,
# so two of them on CI's 2 cores, beside the other test pass (or a second llama-server, or any busy
# process), spend their time waiting on a spinner that is not running: measured, a test that took
# 16 s alone took minutes beside CI's second pass. One thread has no one to wait for.
LLAMA_THREADS = 1


@contextmanager
def llama_server_process(*flags: str, port: int | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """llama-server serving Gemma 3 270M on LLAMA_THREADS threads with extra `flags`: (its URL, its process).

    The process is yours to kill (a fault test does); it is stopped when the block ends.
    """
    port = port or free_port()
    argv = [str(LLAMA_SERVER), "-m", str(GEMMA_270M), "--host", "127.0.0.1", "--port", str(port),
            "-t", str(LLAMA_THREADS), "-c", "4096", *flags]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama-server {' '.join(flags)} did not come up (exit {process.poll()})")
            time.sleep(0.2)
        yield url, process
    finally:
        stop_process(process)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
