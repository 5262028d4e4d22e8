"""Load levels split across measuring processes (issue 41: one asyncio loop cannot keep per-chunk
timing honest at hundreds of streams).

From `split_from` requests at once, a level's bursts are sent by several processes (pool.py,
child.py) under one plan: every request of a burst is planned to start at the same moment, and
its schedule delay is its send minus that moment, as in one process. Each process times its
chunks where it reads them, exactly as the single-process loop; the rows come back and are
reported in the order and form that loop reports them (every request, then the level), and the
level's figures are computed by the same functions (loop.summarize_level, loop.total_tps,
pace.py) from each row's send and finish times.

How many processes: `processes`, or one per core beyond the first (the first is left to the
worker, its recorder and the engine) when it is 0; never more than the level's requests, and
never fewer than needed to keep each process's streams within one connection pool
(MAX_PER_PROCESS), so a level above MAX_PER_PROCESS is split whatever `split_from` says.

Each process's own loop lag and CPU reach the run's client health through `pace.process`.
Plain Python, no Django.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from engines.clients.base import EngineClient, EngineFigures, Generation, GenerationRequest
from runs.core.jobs.concurrency.pace import achieved_concurrency, schedule_delays
from runs.core.jobs.concurrency.pool import ClientRecipe, MeasuringPool, MeasuringProcessLost, Received
from runs.core.jobs.progress import ClientPace, RunProgress

__all__ = [
    "MAX_PER_PROCESS", "MAX_PROCESSES", "SPLIT_FROM", "LevelFigures", "SplitLevels", "SplitPlan",
    "default_processes",
]

MAX_PER_PROCESS = 100  # httpx's default pool holds 100 connections; more would queue in the client
MAX_PROCESSES = 64
SPLIT_FROM = 32


def default_processes() -> int:
    """One measuring process per core beyond the first, at least one."""
    return max(1, (os.cpu_count() or 1) - 1)


@dataclass(frozen=True)
class SplitPlan:
    """From which level on, and over how many processes (0: default_processes()), levels are split."""

    split_from: int = SPLIT_FROM
    processes: int = 0

    def __post_init__(self) -> None:
        if self.split_from < 1 or not 0 <= self.processes <= MAX_PROCESSES:
            raise ValueError(f"split_from must be >= 1 and processes 0 to {MAX_PROCESSES}")

    def processes_for(self, c: int) -> int:
        """The processes that drive a level of c requests at once; 0: the job's own loop does."""
        if c < self.split_from and c <= MAX_PER_PROCESS:
            return 0
        return min(c, max(self.processes or default_processes(), math.ceil(c / MAX_PER_PROCESS)))


@dataclass(frozen=True)
class LevelFigures:
    """The single-process loop's own functions for a level's figures (loop.py passes them, since it
    imports this module): loop.summarize_level and loop.total_tps."""

    summarize_level: Callable[..., dict[str, Any]]
    total_tps: Callable[[Sequence[Generation]], float | None]


class SplitLevels:
    """An async context over a sweep: `drives(c)` says whether level c is split, `level` runs one.

    Processes start at the first split level and serve every later one; on exit they stop and
    their health goes to `pace`. A process lost outside a burst fails the run there.
    """

    def __init__(
        self, client: EngineClient, plan: SplitPlan, pace: ClientPace | None, figures: LevelFigures
    ) -> None:
        self.client = client
        self.plan = plan
        self.pace = pace
        self.figures = figures
        self.pool: MeasuringPool | None = None

    async def __aenter__(self) -> SplitLevels:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.pool is None:
            return
        healths, lost = await self.pool.close()
        for figures in healths:
            if self.pace is not None:
                self.pace.process(figures)
        if lost and exc is None:
            raise MeasuringProcessLost("; ".join(lost) + ": every request was measured, but its client "
                                       "health is missing")

    def drives(self, c: int) -> bool:
        return self.plan.processes_for(c) > 0

    async def level(
        self, bursts: Sequence[Sequence[GenerationRequest]], answer_tokens: int, progress: RunProgress,
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One level: each burst's requests at once, one burst after another; its request rows (each
        reported) and its summary, as loop._level gives them."""
        c = len(bursts[0])
        n = self.plan.processes_for(c)
        if self.pool is None:
            self.pool = MeasuringPool(ClientRecipe.of(self.client))
        await self.pool.grow(n)
        rows: list[dict[str, Any]] = []
        totals: list[float | None] = []
        achieved: list[float | None] = []
        for rep, requests in enumerate(bursts):
            total, kept = await self._burst(requests, n, rep, rows, progress)
            totals.append(total)
            achieved.append(kept)
        level = self.figures.summarize_level(c, rows, totals, answer_tokens, achieved)
        if self.pace is not None and level["achieved_concurrency"] is not None:
            self.pace.achieved(c, level["achieved_concurrency"])
        return rows, level

    async def _burst(
        self, requests: Sequence[GenerationRequest], n: int, rep: int, rows: list[dict[str, Any]],
        progress: RunProgress,
    ) -> tuple[float | None, float | None]:
        """One burst's rows appended to `rows` and reported; its total tok/s and achieved concurrency."""
        c = len(requests)
        assert self.pool is not None
        try:
            planned, received = await self.pool.burst(requests, n, f"level {c}, repetition {rep + 1}")
        except MeasuringProcessLost as lost:
            await _report(lost.rows, c, rep, rows, progress)
            raise
        ok = [_timed(row, finished) for row, finished in (received[i] for i in sorted(received))
              if finished is not None]
        if self.pace is not None:
            for delay_s in schedule_delays(ok, planned):
                self.pace.scheduled(delay_s)
        await _report(received, c, rep, rows, progress)
        # A burst with a failure had fewer than c to keep in flight: not the client's shortfall.
        return self.figures.total_tps(ok), achieved_concurrency(ok, planned) if len(ok) == c else None


async def _report(
    received: Received, c: int, rep: int, rows: list[dict[str, Any]], progress: RunProgress
) -> None:
    """Each received row in index order, as the single-process loop reports them."""
    for index in sorted(received):
        rows.append(received[index][0] | {"concurrency": c, "rep": rep, "index": index})
        await progress.on_sample("request", rows[-1])


def _timed(row: dict[str, Any], finished_at: float) -> Generation:
    """A request's send, finish and tokens as a Generation, for the figures that read those only."""
    figures = EngineFigures(output_tokens=row.get("output_tokens"))
    return Generation(sent_at=row["sent_at"], chunks=[], finished_at=finished_at, figures=figures)
