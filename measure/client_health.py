"""Client health: whether the measuring loop, not the engine, set a run's pace (issue 41).

A speed run times each streamed chunk on the worker's asyncio event loop. When that loop is
starved (a blocking call, a loop thread using its whole core) chunks are read late and the
figures are the tool's, not the engine's. `ClientHealth` watches the loop for the run's duration,
on the same loop as the job, and says what it saw:

- ``loop_lag_ms``: how late a probe timer due every PROBE_INTERVAL_S fired (p50, p99, max);
- ``cpu_pct_of_core``: the whole measuring process's CPU over the run, as % of one core;
- ``loop_cpu_pct_of_core``: the event loop's own thread's CPU, as % of one core;
- ``live_updates_thinned``: live updates the recorder dropped to keep up (0 while nothing thins);
- ``schedule_delay_ms``: how late requests started against their plan (p50, p99), None unless a
  job reported any;
- ``achieved_concurrency``: per load level, the requests in flight the client kept against those
  requested (``[{requested, achieved}]``), None unless a job reported any;
- ``processes``: when a job split load levels across measuring processes (a concurrency sweep
  from its split_from on), each process's own loop figures (loop_lag_ms, probes, late_probes,
  wall_s, cpu_pct_of_core, loop_cpu_pct_of_core, pid), the job's own first; None otherwise.
  Then loop_lag_ms (with probes and late_probes) is the worst process's, by p99, and the two CPU
  figures the highest of the processes watched MIN_CPU_WALL_S or more, so the verdict and its
  words judge the most loaded measuring loop.

`verdict` calls a run client-bound when a figure passes its threshold (THRESHOLDS), naming which.
The thresholds, measured on this code's own loops (docs/metrics.md, Client health):

- loop lag p99 above 50 ms, with MIN_LATE_PROBES wake-ups that late at least (under 100 probes
  p99 is the maximum, and one hiccup of the OS's must not decide). An idle loop's p99 stayed under
  ~10 ms on two cores crowded by four spinning processes, ~16 ms with a spinning thread holding
  the GIL; a simulator run's under 4 ms; a loop blocked for 100 ms now and then reads ~100 ms.
  AIPerf warns at 25 ms; 50 ms leaves a quiet run on a busy CI box its margin, and a chunk read
  50 ms late is off by more than a fast engine's gap between tokens.
- loop thread CPU above 85 % of a core (AIPerf flags workers above 85 %): a busy loop has no slack
  left to read chunks as they come. Judged on the loop's thread, not the process: the in-process
  simulator, the telemetry sampler and the database thread use CPU beside it without starving it.
  Only over runs of MIN_CPU_WALL_S or more, where the job's start-up work does not dominate.
- any live update thinned: the recorder could not keep up.
- schedule delay p99 above 50 ms: requests started later than planned, so offered load was lower.
- achieved concurrency under 75 % of the requested at any level (ACHIEVED_SHARE): a quarter of the
  load the level asked for was missing while it should all have been in flight. Quiet concurrency
  sweeps on the in-process simulator, on two cores shared with a second test suite, kept 91 % or
  more up to 16 streams and 78 % or more at 100 streams with 16-token answers (the shortest window
  against the longest ramp of sends); 97 % and 92 % with 64-token answers.

Plain Python, no Django.
"""
from __future__ import annotations

import asyncio
import os
import time
from array import array
from dataclasses import dataclass
from typing import Any

from measure.stats import percentile

__all__ = [
    "MIN_CPU_WALL_S", "MIN_LATE_PROBES", "PROBE_INTERVAL_S", "THRESHOLDS",
    "ClientHealth", "Thresholds", "short_level", "verdict",
]

# Each wake of an idle loop cost 110 to 180 us of CPU on this 2-core VM (a bare time.sleep wake
# 48 us): every 20 ms that was 0.7 % of a core, a visible share of a one-stream run's CPU per
# 1,000 tokens against a slow engine (make bench-peers); every 50 ms it was still 0.07 s of the
# measuring loop's 0.34 s over 20 s of a one-stream run at 40 tok/s (issue 41). Every 100 ms sees each
# stall of 100 ms or more and half of those of 50 ms: the probes sample the lag a chunk arriving
# at any moment would meet, and the threshold asks for two late ones, not for every stall.
PROBE_INTERVAL_S = 0.1
MIN_CPU_WALL_S = 2.0
MIN_LATE_PROBES = 2


@dataclass(frozen=True)
class Thresholds:
    """Above these a run is client-bound (module docstring: why these numbers)."""

    loop_lag_p99_ms: float = 50.0
    loop_cpu_pct_of_core: float = 85.0
    live_updates_thinned: int = 0
    schedule_delay_p99_ms: float = 50.0
    achieved_concurrency_share: float = 0.75


THRESHOLDS = Thresholds()


class ClientHealth:
    """An async context that watches the running loop while its body runs; `figures()` after it.

    The recorder may call `thinned()` for each live update it drops, and a job `scheduled()` with
    how late a request started against its plan and `achieved()` with a load level's concurrency
    (it is the job's runs.core.jobs.progress.ClientPace).
    """

    def __init__(self, interval_s: float = PROBE_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.lags_s = array("d")
        self.delays_s = array("d")
        self.levels: list[dict[str, float]] = []
        self.live_updates_thinned = 0
        self.processes: list[dict[str, Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._start = self._end = (0.0, 0.0, 0.0)

    async def __aenter__(self) -> ClientHealth:
        self._start = _clocks()
        self._arm(asyncio.get_running_loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._end = _clocks()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        # A timer callback, not a task that sleeps: no coroutine step and no future per wake.
        due = loop.time() + self.interval_s
        self._timer = loop.call_at(due, self._woke, loop, due)

    def _woke(self, loop: asyncio.AbstractEventLoop, due: float) -> None:
        self.lags_s.append(max(0.0, loop.time() - due))
        self._arm(loop)

    def thinned(self, n: int = 1) -> None:
        """Count `n` live updates dropped to keep up."""
        self.live_updates_thinned += n

    def scheduled(self, delay_s: float) -> None:
        """Note one request that started `delay_s` after its planned start."""
        self.delays_s.append(max(0.0, delay_s))

    def achieved(self, requested: int, achieved: float) -> None:
        """Note a load level that asked for `requested` requests in flight and kept `achieved`."""
        self.levels.append({"requested": requested, "achieved": round(achieved, 3)})

    def process(self, figures: dict[str, Any]) -> None:
        """Note a measuring process beside this loop's, with its own loop's figures and pid."""
        self.processes.append(dict(figures))

    def figures(self) -> dict[str, Any]:
        """What the watch saw, with the verdict: the dict a run's summary stores as client_health."""
        wall = self._end[0] - self._start[0]
        own: dict[str, Any] = {
            "loop_lag_ms": _spread_ms(self.lags_s, with_max=True),
            "probes": len(self.lags_s),
            "late_probes": sum(lag * 1000 > THRESHOLDS.loop_lag_p99_ms for lag in self.lags_s),
            "wall_s": round(wall, 3),
            "cpu_pct_of_core": _pct(self._end[1] - self._start[1], wall),
            "loop_cpu_pct_of_core": _pct(self._end[2] - self._start[2], wall),
        }
        health: dict[str, Any] = _worst(own, self.processes) | {
            "live_updates_thinned": self.live_updates_thinned,
            "schedule_delay_ms": _spread_ms(self.delays_s) if self.delays_s else None,
            "achieved_concurrency": list(self.levels) or None,
            "processes": [own | {"pid": os.getpid()}, *self.processes] if self.processes else None,
        }
        reasons = verdict(health)
        return health | {"client_bound": bool(reasons), "reasons": reasons}


def verdict(health: dict[str, Any], limits: Thresholds = THRESHOLDS) -> list[str]:
    """The names of the figures of `health` past their threshold; empty for a healthy run."""
    reasons = []
    lag = health.get("loop_lag_ms")
    # Two late wake-ups at least: on a short job p99 is the maximum, one hiccup of the OS's.
    late = health.get("late_probes", MIN_LATE_PROBES)
    if lag and lag["p99"] > limits.loop_lag_p99_ms and late >= MIN_LATE_PROBES:
        reasons.append("loop_lag")
    cpu = health.get("loop_cpu_pct_of_core")
    if cpu is not None and health.get("wall_s", 0) >= MIN_CPU_WALL_S and cpu > limits.loop_cpu_pct_of_core:
        reasons.append("cpu")
    if health.get("live_updates_thinned", 0) > limits.live_updates_thinned:
        reasons.append("thinned")
    delay = health.get("schedule_delay_ms")
    if delay and delay["p99"] > limits.schedule_delay_p99_ms:
        reasons.append("schedule_delay")
    if short_level(health, limits) is not None:
        reasons.append("achieved_concurrency")
    return reasons


def short_level(health: dict[str, Any], limits: Thresholds = THRESHOLDS) -> dict[str, float] | None:
    """The level of `health` that kept the smallest share of its requested concurrency, if under the limit."""
    levels = health.get("achieved_concurrency") or []
    worst = min(levels, key=lambda level: level["achieved"] / level["requested"], default=None)
    if worst is None or worst["achieved"] >= limits.achieved_concurrency_share * worst["requested"]:
        return None
    return worst


def _worst(own: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
    """`own` loop figures, or with other measuring processes the worst of each over all (module doc)."""
    if not others:
        return own
    every = [own, *others]
    lagging = max(every, key=lambda f: (f.get("loop_lag_ms") or {}).get("p99", -1.0))
    watched = [f for f in every if f.get("wall_s", 0) >= MIN_CPU_WALL_S] or [own]
    worst = dict(own) | {key: lagging.get(key) for key in ("loop_lag_ms", "probes", "late_probes")}
    for key in ("cpu_pct_of_core", "loop_cpu_pct_of_core"):
        worst[key] = max((f[key] for f in watched if f.get(key) is not None), default=own[key])
    return worst


def _clocks() -> tuple[float, float, float]:
    return time.perf_counter(), time.process_time(), time.thread_time()


def _pct(cpu_s: float, wall_s: float) -> float | None:
    return round(100 * cpu_s / wall_s, 1) if wall_s > 0 else None


def _spread_ms(values_s: array, with_max: bool = False) -> dict[str, float] | None:
    if not values_s:
        return None
    ordered = sorted(values_s)
    spread = {"p50": percentile(ordered, 50), "p99": percentile(ordered, 99)}
    if with_max:
        spread["max"] = ordered[-1]
    return {name: round(1000 * value, 2) for name, value in spread.items()}
