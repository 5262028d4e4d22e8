"""The host's side of telemetry: CPU load from /proc/stat, memory from /proc/meminfo, and package
power from RAPL (/sys/class/powercap) where the OS lets us read it.

On a unified-memory machine (DGX Spark's GB10) NVML reports no memory figures, so the OS's
"used" (MemTotal - MemAvailable) is the machine's memory in use, the GPU's included.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["HostSource", "ProcFile", "cpu_times", "memory", "rapl_domains"]


def cpu_times(text: str) -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat's first line; iowait and idle count as idle."""
    fields = [int(v) for v in text.split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])  # guest time is already inside user and nice
    return total - idle, total


def memory(text: str) -> tuple[int, int]:
    """(used, total) bytes from /proc/meminfo: used = MemTotal - MemAvailable."""
    total = _kib(text, "MemTotal")
    if total is None:
        raise ValueError("no MemTotal in /proc/meminfo")
    available = _kib(text, "MemAvailable")
    return (total - (total if available is None else available)) * 1024, total * 1024


def _kib(text: str, name: str) -> int | None:
    """The kB figure of the meminfo line `name`, found without splitting the whole text."""
    head = f"{name}:"
    if text.startswith(head):
        at = 0
    else:
        at = text.find("\n" + head) + 1
        if not at:
            return None
    return int(text[at + len(head) :].split(None, 1)[0])


class ProcFile:
    """A file kept open and read again from its start at each reading (os.pread): no open, stat
    and close each time. Reading /proc/stat and /proc/meminfo so took a fifth of the CPU of
    reading them anew, and the sampler reads them ten times a second (issue 41)."""

    def __init__(self, path: Path, size: int = 16384) -> None:
        self.size = size
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def text(self) -> str:
        """The file's text now (its first `size` bytes)."""
        return os.pread(self.fd, self.size, 0).decode("ascii", "replace")

    def close(self) -> None:
        """Close the file; reading it again raises OSError."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def rapl_domains(root: Path) -> list[Path]:
    """The readable package-level RAPL energy counters under `root` (/sys/class/powercap)."""
    found = []
    for zone in sorted(root.glob("intel-rapl:*")):
        if ":" in zone.name.split("intel-rapl:", 1)[1]:
            continue  # a sub-zone (core, uncore, dram) is already inside its package
        counter = zone / "energy_uj"
        try:
            int(counter.read_text())
        except (OSError, ValueError):
            continue  # root-only since 2020 on most distributions
        found.append(zone)
    return found


class HostSource:
    """CPU load since the previous reading, memory in use, and RAPL package power when readable.

    :param proc, powercap: where /proc and /sys/class/powercap are (tests point them elsewhere)
    """

    name = "host"

    def __init__(self, proc: Path = Path("/proc"), powercap: Path = Path("/sys/class/powercap")) -> None:
        self.proc = proc
        self.rapl = rapl_domains(powercap) if powercap.is_dir() else []
        self._stat = ProcFile(proc / "stat", 1024)  # its first line is the one read
        self._meminfo = ProcFile(proc / "meminfo")
        self._cpu = cpu_times(self._stat.text())
        self._energy: tuple[float, list[int]] | None = None

    def close(self) -> None:
        """Close the /proc files it keeps open."""
        self._stat.close()
        self._meminfo.close()

    def read(self, t: float) -> dict[str, Any]:
        """One reading at run time `t` (seconds), in the telemetry sample's field names."""
        busy, total = cpu_times(self._stat.text())
        d_busy, d_total = busy - self._cpu[0], total - self._cpu[1]
        self._cpu = (busy, total)
        used, mem_total = memory(self._meminfo.text())
        reading: dict[str, Any] = {
            "cpu_load": round(d_busy / d_total, 4) if d_total > 0 else 0.0,
            "mem_used_bytes": used,
            "mem_total_bytes": mem_total,
        }
        power = self._rapl_power(t)
        if power is not None:
            reading["cpu_power_w"] = power
        return reading

    def _rapl_power(self, t: float) -> float | None:
        """Mean package power since the previous reading (a counter, so no reading is lost)."""
        if not self.rapl:
            return None
        try:
            counters = [int((zone / "energy_uj").read_text()) for zone in self.rapl]
        except (OSError, ValueError):
            return None
        previous, self._energy = self._energy, (t, counters)
        if previous is None or t <= previous[0]:
            return None
        wraps = [self._range(zone) for zone in self.rapl]
        joules = (
            sum((now - then) % wrap for now, then, wrap in zip(counters, previous[1], wraps, strict=True))
            / 1e6
        )
        return round(joules / (t - previous[0]), 2)

    @staticmethod
    def _range(zone: Path) -> int:
        try:
            return int((zone / "max_energy_range_uj").read_text()) + 1
        except (OSError, ValueError):
            return 2**64
