"""Watching a run while its job runs: a heartbeat every interval, and a stop as soon as the run
is no longer running (cancelled from the UI, or failed as lost by a reaper).

The job itself only notices a cancel at its next flush, and a job blocked in one long request
(a slow engine, an agent step) may not flush for minutes; the guard notices within one interval
and cancels the job, so the engine is released at once. Its heartbeat also keeps a healthy run
that waits on a long request from looking lost to the reapers.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

from runs.models import Run
from runs.worker.recorder import RunCancelled, reset_connection

__all__ = ["RunGuard"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class RunGuard:
    """Runs a job while a watcher beats the run's heartbeat and cancels the job once it stopped."""

    def __init__(self, run_id: int, interval_s: float) -> None:
        """:param interval_s: seconds between heartbeats (and looks at the run's status)."""
        self.run_id = run_id
        self.interval_s = interval_s
        self.stopped: str | None = None  # the status the run was found in, once it stopped running

    async def run(self, job: Awaitable[T]) -> T:
        """Await the job; raise RunCancelled if the run stopped running meanwhile."""
        work = asyncio.ensure_future(job)
        watch = asyncio.ensure_future(self._watch(work))
        try:
            return await work
        except asyncio.CancelledError:
            if self.stopped is None:
                raise  # we are being cancelled ourselves
            raise RunCancelled(f"run {self.run_id} is {self.stopped}") from None
        finally:
            watch.cancel()
            await asyncio.wait({watch})

    async def _watch(self, work: asyncio.Future) -> None:
        while not work.done():
            await asyncio.sleep(self.interval_s)
            try:
                status = await _beat(self.run_id)
            except Exception:
                # A database blip must not end a healthy run; the job's own writes report real trouble.
                log.warning("heartbeat of run %s failed", self.run_id, exc_info=True)
                await reset_connection()  # a broken connection is not reused
                continue
            if status is not None:
                self.stopped = status
                work.cancel()
                return


async def _beat(run_id: int) -> str | None:
    """Refresh the heartbeat of a running run; else return the status it has now."""
    if await Run.objects.abeat(run_id):
        return None
    status = await Run.objects.filter(pk=run_id).values_list("status", flat=True).afirst()
    return status or "deleted"
