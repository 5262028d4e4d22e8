"""Whether a worker listens on each machine's queue, and how many runs wait there.

With a broker, one control broadcast (`inspect().active_queues()`, with a short timeout) asks
every worker which queues it consumes; the answer is kept in Django's cache for
SPARKDASH_WORKER_PRESENCE_TTL_S, so a page view asks the broker at most once in that time.
A worker busy with a run may be too busy to answer (the solo pool), so a machine whose running
run heartbeats recently counts as served too. In the embedded default the worker is a thread
of this process: always there.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.utils import timezone
from django.utils.translation import gettext
from kombu.exceptions import OperationalError

from engines.models import Machine
from runs.models import Run

log = logging.getLogger(__name__)

CACHE_KEY = "sparkdash:worker-queues"


@dataclass(frozen=True)
class WorkerPresence:
    """One machine's queue: who consumes it, the run that proves a busy worker, how many runs wait."""

    machine: Machine
    workers: tuple[str, ...] = ()
    in_process: bool = False
    busy_run: int | None = None
    queued: int = 0
    broker_error: str = ""

    @property
    def queue(self) -> str:
        return self.machine.queue_name

    @property
    def listening(self) -> bool:
        """True when runs queued on this machine will be picked up."""
        return self.in_process or bool(self.workers) or self.busy_run is not None

    @property
    def start_command(self) -> str:
        """The command that starts this machine's worker, on the machine itself."""
        return f"make worker {self.machine.command_args}"

    @property
    def absent_message(self) -> str:
        """What a run queued here is waiting for, in the words the run page shows."""
        return f"no worker listens on queue {self.queue}: start one with {self.start_command}"


def listening_queues() -> tuple[dict[str, list[str]], str]:
    """Each queue some worker consumes, with those workers' names, and the broker's error if any."""
    found = cache.get(CACHE_KEY)
    if found is None:
        found = _inspect_queues()
        cache.set(CACHE_KEY, found, settings.SPARKDASH_WORKER_PRESENCE_TTL_S)
    return found["queues"], found["error"]


def _inspect_queues() -> dict[str, Any]:
    inspect = current_app.control.inspect(timeout=settings.SPARKDASH_WORKER_INSPECT_TIMEOUT_S)
    try:
        replies = inspect.active_queues() or {}
    except (OperationalError, OSError) as exc:
        log.warning("cannot ask the broker which queues have workers: %s", exc)
        return {"queues": {}, "error": f"cannot reach the broker ({exc})"}
    queues: dict[str, list[str]] = {}
    for worker, consumed in replies.items():
        for queue in consumed or []:
            queues.setdefault(queue["name"], []).append(worker)
    return {"queues": {q: sorted(w) for q, w in queues.items()}, "error": ""}


def presence_for(machines: list[Machine]) -> dict[int, WorkerPresence]:
    """The presence of each machine's worker, keyed by machine id (one query, one cached broadcast)."""
    fresh = timezone.now() - timedelta(seconds=settings.SPARKDASH_LOST_RUN_S)
    per_machine = Run.objects.filter(machine_id__in=[m.pk for m in machines]).order_by().values("machine_id")
    found = per_machine.annotate(
        queued=Count("pk", filter=Q(status=Run.Status.QUEUED)),
        busy=Max("pk", filter=Q(status=Run.Status.RUNNING, heartbeat__gte=fresh)),
    )
    runs = {row["machine_id"]: (row["queued"], row["busy"]) for row in found}
    embedded = settings.SPARKDASH_WORKER != "celery"
    queues, error = listening_queues() if machines and not embedded else ({}, "")
    presence = {}
    for m in machines:
        queued, busy = runs.get(m.pk, (0, None))
        workers = tuple(queues.get(m.queue_name, ()))
        presence[m.pk] = WorkerPresence(
            m, workers, in_process=embedded, busy_run=busy, queued=queued, broker_error=error
        )
    return presence


def presence_of(machine: Machine) -> WorkerPresence:
    """The presence of one machine's worker."""
    return presence_for([machine])[machine.pk]


def queued_warning(run: Run) -> str:
    """For a queued run that no worker will pick up, why it waits and what to start; else ""."""
    if run.status != Run.Status.QUEUED:
        return ""
    presence = presence_of(run.machine)
    if presence.listening:
        return ""
    if presence.broker_error:
        return gettext("%(error)s: no worker can be seen on queue %(queue)s") % {
            "error": presence.broker_error, "queue": presence.queue}
    return gettext("no worker listens on queue %(queue)s: start one with %(command)s") % {
        "queue": presence.queue, "command": presence.start_command}
