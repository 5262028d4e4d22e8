"""The periodic reaper: every Celery worker fails lost runs on every machine, every few seconds.

A run whose worker was killed is otherwise reaped only when the next run on its machine is
claimed; with nothing queued there (or the redelivered task gone, or its worker still down)
it would show "running" forever. Any live worker now fails it once its heartbeat is
SPARKDASH_LOST_RUN_S old; the conditional update keeps several workers from doubling up.
"""
from __future__ import annotations

import logging
import threading

from django.db import connections

from runs.worker import execution

__all__ = ["Reaper", "start_reaper"]

log = logging.getLogger(__name__)


class Reaper(threading.Thread):
    """A daemon thread that fails lost runs every `interval_s` until stopped (or the process ends)."""

    def __init__(self, interval_s: float) -> None:
        super().__init__(name="sparkdash-reaper", daemon=True)
        self.interval_s = interval_s
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                if reaped := execution.reap_lost_runs():
                    log.warning("reaped %d lost run(s)", reaped)
            except Exception:
                log.exception("reaping lost runs failed; trying again in %g s", self.interval_s)
            finally:
                # No connection is kept across the wait (Postgres may restart meanwhile).
                connections.close_all()  # this thread's only
            self.stopping.wait(self.interval_s)

    def stop(self) -> None:
        """Stop after the current pass and wait for it."""
        self.stopping.set()
        self.join()


def start_reaper(interval_s: float) -> Reaper:
    """Start a Reaper thread and return it."""
    reaper = Reaper(interval_s)
    reaper.start()
    return reaper
