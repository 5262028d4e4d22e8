"""The telemetry sampler: every source read at a fixed rate on a thread of its own.

The thread never touches the event loop or the database: readings pile up in a list the run's
side drains a few times a second. A reading's `t` is seconds since `zero` on the monotonic
clock, the clock the run's samples are stamped with.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from engines.telemetry.host import HostSource
from engines.telemetry.nvml import open_nvml

log = logging.getLogger(__name__)

__all__ = ["NO_GPU_NOTE", "Source", "TelemetrySampler", "machine_sources"]

NO_GPU_NOTE = "no GPU telemetry on this machine"


class Source(Protocol):
    """Something that gives one flat reading (telemetry sample fields) at run time `t`."""

    name: str

    def read(self, t: float) -> dict[str, Any]: ...


def machine_sources(nvml: Any = None) -> tuple[list[Source], str | None]:
    """This machine's sources (the host always, NVML where a driver answers) and why there is no GPU's."""
    sources: list[Source] = [HostSource()]
    gpu, why = open_nvml(nvml)
    if gpu is not None:
        sources.append(gpu)
    else:
        log.info("telemetry: %s (%s)", NO_GPU_NOTE, why)
    return sources, why


class TelemetrySampler:
    """Reads `sources` `rate_hz` times a second from start() to stop(); the readings are kept.

    :param zero: the monotonic time the readings' `t` counts from (the run's start)
    """

    def __init__(self, sources: list[Source], rate_hz: float = 10.0, zero: float | None = None) -> None:
        if not 0 < rate_hz <= 50:
            raise ValueError(f"telemetry rate must be in (0, 50] Hz, not {rate_hz}")
        self.sources = sources
        self.interval_s = 1 / rate_hz
        self.zero = time.monotonic() if zero is None else zero
        self.phase = "load"
        self.readings: list[dict[str, Any]] = []
        self.cpu_s = 0.0  # the thread's own CPU time: what telemetry costs the run
        self.failures: dict[str, str] = {}
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)

    @property
    def gpu(self) -> bool:
        """Whether a GPU source is among the sources."""
        return any(s.name == "nvml" for s in self.sources)

    def start(self) -> None:
        """Begin reading on the sampler's thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop reading; returns once the thread has ended (at most one reading's time)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def drain(self) -> list[dict[str, Any]]:
        """The readings taken since the previous drain, oldest first."""
        with self._lock:
            taken, self._pending = self._pending, []
        return taken

    def _loop(self) -> None:
        started_cpu, due = time.thread_time(), time.monotonic()
        while not self._stop.is_set():
            reading = self.read_once()
            with self._lock:
                self.readings.append(reading)
                self._pending.append(reading)
            self.cpu_s = time.thread_time() - started_cpu
            due = max(due + self.interval_s, time.monotonic())  # a late reading is not made up for
            self._stop.wait(max(0.0, due - time.monotonic()))

    def read_once(self) -> dict[str, Any]:
        """One reading of every source, with its time and the run's phase; a failing source is
        left out of it (and named in `failures`), never stops the others."""
        t = round(time.monotonic() - self.zero, 3)
        reading: dict[str, Any] = {"t": t, "phase": self.phase}
        for source in self.sources:
            try:
                reading |= source.read(t)
            except Exception as exc:  # a source is outside code (a driver, /proc): keep sampling
                if source.name not in self.failures:
                    log.warning("telemetry source %s failed: %r", source.name, exc)
                self.failures[source.name] = repr(exc)
        return reading
