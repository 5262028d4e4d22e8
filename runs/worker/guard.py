"""Watching a run while its job runs: a heartbeat every interval, and a stop as soon as the run
is no longer running (cancelled from the UI, or failed as lost by a reaper).

The job itself only notices a cancel at its next flush, and a job blocked in one long request
(a slow engine, an agent step) may not flush for minutes; the guard notices within one interval
and cancels the job, so the engine is released at once. Its heartbeat also keeps a healthy run
that waits on a long request from looking lost to the reapers.

The run's recorder beats too, at each pass that stores samples (about once a second while a run
streams or its telemetry drains), and reads the run's status back. Where a pass did so within the
interval, the guard takes that status instead of writing a second heartbeat: one database write
a second less for the worker (issue 41: what a run costs per second weighs on a slow engine).
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from runs.models import Run
from runs.worker.recorder import RunCancelled, reset_connection

__all__ = ["RecentBeats", "RunGuard"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class RecentBeats(Protocol):
    """Who else beats the run's heartbeat (its recorder) and reads its status back."""

    def status_since(self, t: float) -> str | None:
        """The run's status as read back after a heartbeat written at monotonic time `t` or later;
        None when no heartbeat was written since."""
        ...


class RunGuard:
    """Runs a job while a watcher beats the run's heartbeat and cancels the job once it stopped."""

    def __init__(self, run_id: int, interval_s: float, beats: RecentBeats | None = None) -> None:
        """:param interval_s: seconds between heartbeats (and looks at the run's status).
        :param beats: the run's recorder, whose own heartbeats within an interval stand for the guard's."""
        self.run_id = run_id
        self.interval_s = interval_s
        self.beats = beats
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
            since = time.monotonic()
            await asyncio.sleep(self.interval_s)
            try:
                status = self._recent(since) or await _beat(self.run_id)
            except Exception:
                # A database blip must not end a healthy run; the job's own writes report real trouble.
                log.warning("heartbeat of run %s failed", self.run_id, exc_info=True)
                await reset_connection()  # a broken connection is not reused
                continue
            if status != Run.Status.RUNNING:
                self.stopped = status
                work.cancel()
                return

    def _recent(self, since: float) -> str | None:
        return self.beats.status_since(since) if self.beats is not None else None


async def _beat(run_id: int) -> str:
    """Refresh the heartbeat of a running run ("running"); else return the status it has now."""
    if await Run.objects.abeat(run_id):
        return Run.Status.RUNNING
    status = await Run.objects.filter(pk=run_id).values_list("status", flat=True).afirst()
    return status or "deleted"
