"""The Django side of a job's progress: samples stored in batches, then broadcast, throttled."""
from __future__ import annotations

import time
from typing import Any

from django.db.models import Max
from django.utils import timezone

from runs import live
from runs.models import Run, Sample

# The samples that count as one unit of a run's progress (a request, a probe step, a question).
PROGRESS_KINDS = ("request", "step", "question")


class RunCancelled(Exception):
    """The run was cancelled by a user; the job stops at the next flush."""


class RunRecorder:
    """Implements the core's RunProgress: buffers samples, flushes a few times per second.

    A flush writes the pending samples, then broadcasts them, so a browser that joins late
    finds in the database every sample it did not receive live.
    """

    def __init__(self, run_id: int, flush_interval_s: float = 0.25) -> None:
        self.run_id = run_id
        self.flush_interval_s = flush_interval_s
        self.started = time.monotonic()
        self.pending: list[Sample] = []
        self.next_seq = 0
        self.done = 0
        self.last_flush = 0.0

    async def open(self) -> None:
        """Continue numbering after any samples a previous delivery of this run stored."""
        last = await Sample.objects.filter(run_id=self.run_id).aaggregate(m=Max("seq"))
        self.next_seq = 0 if last["m"] is None else last["m"] + 1

    async def on_start(self, total: int) -> None:
        await Run.objects.filter(pk=self.run_id).aupdate(progress_total=total, heartbeat=timezone.now())
        await self.flush()

    async def on_sample(self, kind: str, values: dict[str, Any]) -> None:
        t = time.monotonic() - self.started
        self.pending.append(Sample(run_id=self.run_id, seq=self.next_seq, t=t, kind=kind, values=values))
        self.next_seq += 1
        if kind in PROGRESS_KINDS:
            self.done += 1
        if time.monotonic() - self.last_flush >= self.flush_interval_s:
            await self.flush()

    async def flush(self) -> None:
        """Store pending samples, refresh progress and heartbeat, broadcast; stop if cancelled."""
        self.last_flush = time.monotonic()
        batch, self.pending = self.pending, []
        if batch:
            await Sample.objects.abulk_create(batch, ignore_conflicts=True)
        await Run.objects.filter(pk=self.run_id).aupdate(progress_done=self.done, heartbeat=timezone.now())
        run = await load_run(self.run_id)
        if batch:
            await live.broadcast(self.run_id, {"type": "samples", "samples": [s.to_dict() for s in batch]})
        await live.broadcast(self.run_id, {"type": "run", "run": run.to_dict()})
        if run.status == Run.Status.CANCELLED:
            raise RunCancelled


async def load_run(run_id: int) -> Run:
    return await Run.objects.select_related("config__engine", "machine").aget(pk=run_id)


