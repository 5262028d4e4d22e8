"""The embedded default's scheduler: fires due schedules without Redis or celery beat.

With a broker, celery beat fires schedules (runs.actions.schedules keeps its periodic tasks). On the
embedded default, `manage.py serve` asks the web process to run this loop in a thread beside its
in-process worker (SPARKDASH_EMBEDDED_SCHEDULER=1 in that process's environment only; the
project's AppConfig.ready, sparkdash.apps, calls start() once every app is ready): every TICK_S
it fires each enabled schedule whose next firing, counted from its last one, has come. A schedule
missed while nothing ran fires once when the loop starts, as beat does with an overdue task. The
last tick is kept in this process, which is the one serving the pages, so they can say whether
schedules fire at all.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from runs.actions.schedules import fire, next_fire, schedule_statuses
from runs.models import Schedule, SweepExecution

__all__ = ["ENV", "TICK_S", "also_tick", "running", "start", "stop", "tick"]

log = logging.getLogger(__name__)

ENV = "SPARKDASH_EMBEDDED_SCHEDULER"
TICK_S = 10.0
_state: dict[str, datetime | threading.Thread | threading.Event | None] = {"last_tick": None, "thread": None}
# What apps above runs fire on each tick too (claims' nightly checks): they register here, runs names none.
_ALSO: list[Callable[[datetime], object]] = []


def also_tick(fire_due: Callable[[datetime], object]) -> None:
    """Have each tick call ``fire_due(now)`` too (once per function, however often it registers)."""
    if fire_due not in _ALSO:
        _ALSO.append(fire_due)


def tick(now: datetime | None = None) -> list[SweepExecution]:
    """Fire every enabled schedule that is due at ``now``; the sweep runs they started."""
    now = now or timezone.now()
    _state["last_tick"] = now
    started = []
    for schedule in schedule_statuses(Schedule.objects.filter(enabled=True)):
        if next_fire(schedule, schedule.last_fired or schedule.created) <= now:
            log.info("embedded scheduler: firing schedule %s", schedule.pk)
            if (execution := fire(schedule.pk)) is not None:
                started.append(execution)
    for fire_due in _ALSO:
        fire_due(now)
    return started


def _loop(stopped: threading.Event) -> None:
    while not stopped.is_set():
        try:
            tick()
        except Exception:  # a database that restarts: the next tick tries again
            log.exception("embedded scheduler: tick failed")
        finally:
            close_old_connections()
        stopped.wait(TICK_S)


def start() -> threading.Thread | None:
    """Start the loop in a daemon thread, once per process, when the embedded default asks for it."""
    if settings.SPARKDASH_WORKER == "celery" or os.environ.get(ENV) != "1" or _state["thread"] is not None:
        return None
    stopped = threading.Event()
    thread = threading.Thread(target=_loop, args=(stopped,), name="embedded-scheduler", daemon=True)
    _state["thread"], _state["stopped"] = thread, stopped
    thread.start()
    return thread


def stop() -> None:
    """End the loop after its current tick (a test's scheduler; the web process's ends with it)."""
    stopped, thread = _state.get("stopped"), _state.get("thread")
    if isinstance(stopped, threading.Event) and isinstance(thread, threading.Thread):
        stopped.set()
        thread.join()
    _state["thread"] = _state["stopped"] = None


def running(now: datetime | None = None) -> bool:
    """Whether schedules fire: celery beat (started with the workers), or this loop ticked lately."""
    if settings.SPARKDASH_WORKER == "celery":
        return True
    last = _state["last_tick"]
    return isinstance(last, datetime) and (now or timezone.now()) - last < timedelta(seconds=3 * TICK_S)
