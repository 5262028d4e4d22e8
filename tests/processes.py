"""Stopping the child processes tests and benchmarks start (workers, beat, simulators, engines)."""
from __future__ import annotations

import signal
import subprocess

__all__ = ["stop_process"]


def stop_process(process: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """SIGTERM a child process (if still running), then SIGKILL it if it has not exited in `timeout_s`."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
