"""CPU time by kind of process on this box (from /proc), to tell where a loaded benchmark's cores went."""
from __future__ import annotations

import os
from collections import Counter

TICKS = os.sysconf("SC_CLK_TCK")
# (what to call it, a piece of its command line), first match wins.
KINDS = (
    ("browser renderers", "--type=renderer"),
    ("browser GPU/compositor", "--type=gpu-process"),
    ("browser other", "chromium"),
    ("chromedriver", "chromedriver"),
    ("dashboard (daphne)", "-m daphne"),
    ("worker + socket clients", "tests.bench.live_probe"),
    ("simulator", "tests.bench.simproc"),
    ("postgres", "postgres"),
    ("redis", "redis-server"),
)


def stat_cpu_s(stat_text: str) -> float:
    """User + system CPU seconds from the text of a /proc/PID/stat (or /proc/PID/task/TID/stat)."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_seconds() -> Counter[str]:
    """CPU seconds (user + system) used so far by each kind of live process; the rest as "other"."""
    found: Counter[str] = Counter()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                used = stat_cpu_s(f.read())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        kind = next((name for name, piece in KINDS if piece in command), "other")
        found[kind] += used
    return found


def cores_used(before: Counter[str], after: Counter[str], seconds: float) -> dict[str, float]:
    """Each kind's average cores over the interval (processes that ended meanwhile are not counted)."""
    return {kind: round((after[kind] - before.get(kind, 0.0)) / seconds, 3) for kind in after}
