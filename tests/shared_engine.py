"""One real engine process shared by the tests of a module, started from SparkDash's own recipe.

Started as a user's engine would be, stopped when the tests that share it are done, and started
again when one of them killed it (`url` restarts a dead one).
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from engines.models import EngineConfig
from engines.recipes import render
from engines.recipes.base import LaunchSettings
from tests.factories import EngineConfigFactory
from tests.real_engine import free_port

READY_TIMEOUT_S = 900  # a CPU engine is ready in 50-90 s here when idle, over 300 s with both cores busy


class SharedEngine:
    """An engine process of `kind` started from the recipe for `settings()`."""

    def __init__(
        self, kind: str, binary: Path, settings: Callable[..., dict[str, Any]], log_path: Path
    ) -> None:
        """:param settings: a config's settings with these overrides (none: the shared engine's)."""
        self.kind, self.binary, self.settings = kind, binary, settings
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
        launch = LaunchSettings(kind=self.kind, binary=str(self.binary), port=self.port, **self.settings())
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                render(launch).argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._wait_ready()
        self.startup_s = time.monotonic() - started

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited ({self.process.returncode}); log: {self.log_path}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"{self.kind} not ready in {READY_TIMEOUT_S} s; log: {self.log_path}")

    def kill(self) -> None:
        """SIGKILL the whole engine (API server and its child processes), as a crash would."""
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
        """An external engine config pointing at this engine."""
        settings = self.settings(**fields)
        return EngineConfigFactory(name=name, engine__kind=self.kind, engine__base_url=self.url, **settings)
