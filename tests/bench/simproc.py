"""The simulator (and a bare TCP echo) in their own processes, so they never share the harness's GIL.

`with simulator_process(profile) as sim:` gives the URL and the process (for its CPU time);
`loopback_rtt_s()` measures the bare loopback round trip to another process, the reference
every latency figure is held against. Run as `python -m tests.bench.simproc PROFILE_JSON|echo`.
"""
from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from engines.simulator import SimProfile, serve_forever
from tests.bench.proc_cpu import stat_cpu_s
from tests.processes import stop_process

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class SimProcess:
    """A running simulator process: where it answers and its pid."""

    url: str
    pid: int

    def cpu_s(self) -> float:
        """The process's user + system CPU seconds so far (from /proc)."""
        return stat_cpu_s(Path(f"/proc/{self.pid}/stat").read_text())

    def sends(self) -> dict[int, dict]:
        """The simulator's send log (GET /sim/sends), keyed by each reply's seed."""
        replies = httpx.get(f"{self.url}/sim/sends", timeout=30).json()["replies"]
        return {r["seed"]: r for r in replies}


@contextmanager
def child_process(arg: str, module: str = "tests.bench.simproc") -> Iterator[tuple[str, int]]:
    """Start `python -m MODULE ARG`; yield the address it prints first and its pid."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, arg], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip()
        if not address:
            raise RuntimeError(f"the benchmark helper process exited ({proc.wait()}) before serving")
        yield address, proc.pid
    finally:
        stop_process(proc)


@contextmanager
def simulator_process(profile: SimProfile) -> Iterator[SimProcess]:
    """A simulator serving `profile` in a child process, up and answering on exit of the with-line."""
    with child_process(json.dumps(asdict(profile))) as (url, pid):
        sim = SimProcess(url, pid)
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/v1/models", timeout=5).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield sim


def loopback_rtt_s(n: int = 2000) -> dict[str, float]:
    """The bare loopback round trip (1 byte there and back) to another process: median and p99."""
    with child_process("echo") as (address, _pid):
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            times = []
            for _ in range(n):
                t = time.perf_counter()
                sock.sendall(b"x")
                sock.recv(1)
                times.append(time.perf_counter() - t)
    times.sort()
    return {"median": statistics.median(times), "p99": times[int(0.99 * (len(times) - 1))]}


def _echo() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        print(f"127.0.0.1:{server.getsockname()[1]}", flush=True)
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := conn.recv(64):
            conn.sendall(data)


def main(arg: str) -> None:
    """Serve a simulator for the profile given as JSON, or a TCP echo for "echo"."""
    if arg == "echo":
        _echo()
        return
    serve_forever(SimProfile(**json.loads(arg)), "127.0.0.1", 0, lambda url: print(url, flush=True))


if __name__ == "__main__":
    main(sys.argv[1])
