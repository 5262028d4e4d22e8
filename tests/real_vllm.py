"""One real vLLM (the CPU build `make engine` installs), shared by tests that need no lifecycle of their own.

Started from SparkDash's own launch recipe, as a user's engine would be, and stopped when the tests
that share it are done (or restarted when one of them killed it).
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from engines.models import EngineConfig
from engines.recipes import render
from engines.recipes.base import LaunchSettings
from tests.factories import EngineConfigFactory
from tests.real_engine import VLLM, VLLM_CPU_FLAGS, VLLM_MODEL, free_port

READY_TIMEOUT_S = 900  # 90 s here when idle, over 300 s with both cores busy

SHARED = {
    "speculative_method": "ngram", "lookahead": 4, "prefix_caching": True,
    "context_length": 2048, "parallel": 4, "extra_flags": VLLM_CPU_FLAGS,
}  # fmt: skip


def vllm_settings(**fields: Any) -> dict[str, Any]:
    """A vLLM config's settings: the converted Gemma 3 270M, 2048 context, the CPU flags."""
    return {"model": str(VLLM_MODEL), "context_length": 2048, "extra_flags": VLLM_CPU_FLAGS} | fields


class SharedVllm:
    """A vLLM process started from the recipe for SHARED settings; `url` restarts it if it died."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None

    @property
    def url(self) -> str:
        if self.process is None or self.process.poll() is not None:
            self.start()
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        settings = LaunchSettings(kind="vllm", binary=str(VLLM), port=self.port, **vllm_settings(**SHARED))
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                render(settings).argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._wait_ready()
        self.startup_s = time.monotonic() - started

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited ({self.process.returncode}); log: {self.log_path}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"vLLM not ready in {READY_TIMEOUT_S} s; log: {self.log_path}")

    def kill(self) -> None:
        """SIGKILL the whole engine (API server, engine core), as a crash would."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def config(self, name: str, **fields: Any) -> EngineConfig:
        """An external engine config pointing at this vLLM."""
        settings = vllm_settings(**SHARED) | fields
        return EngineConfigFactory(name=name, engine__kind="vllm", engine__base_url=self.url, **settings)
