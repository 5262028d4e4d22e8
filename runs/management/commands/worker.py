"""`manage.py worker MACHINE`: this box's Celery worker for one machine, on the team's database and broker.

`make worker MACHINE=spark-1 DATABASE_URL=... REDIS_URL=...` runs it on the team's own Spark.
It refuses, before starting anything, when REDIS_URL or DATABASE_URL is unset (a worker on its
own SQLite or without a broker would never see the team's runs) or when the database has no
machine of that name. Then it becomes `celery worker` on the machine's queue, concurrency 1.
"""
from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from engines.models import Machine
from runs.worker.dispatch import worker_argv


class Command(BaseCommand):
    help = "Run one machine's Celery worker (its queue, concurrency 1) on the team's Postgres and Redis."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("machine", help="the machine's name as the dashboard shows it")
        parser.add_argument("--loglevel", default="info")

    def handle(self, *args: Any, **options: Any) -> None:
        machine = find_machine(options["machine"])
        queue = machine.queue_name
        self.stdout.write(
            f"worker for {machine.name} on queue {queue} (concurrency 1): database "
            f"{_where(settings.DATABASE_URL)}, broker {_where(settings.REDIS_URL)}"
        )
        self.stdout.flush()
        argv = [sys.executable, *worker_argv(queue, options["loglevel"])]
        os.chdir(settings.BASE_DIR)
        os.execv(sys.executable, argv)


def find_machine(name: str) -> Machine:
    """The machine named `name` (or whose queue slug it is), after checking the worker can reach the team."""
    if not settings.REDIS_URL:
        raise CommandError("REDIS_URL is not set: give the team's Redis, e.g. REDIS_URL=redis://dash-host:6379/0")
    if not settings.DATABASE_URL:
        raise CommandError(
            "DATABASE_URL is not set: give the team's Postgres, e.g. "
            "DATABASE_URL=postgres://sparkdash:...@dash-host:5432/sparkdash (this box's SQLite has no runs)"
        )
    try:
        machines = list(Machine.objects.all())
    except DatabaseError as exc:
        raise CommandError(f"cannot read machines from {_where(settings.DATABASE_URL)}: {exc}") from exc
    for machine in machines:
        if name in (machine.name, machine.queue_name.removeprefix("machine.")):
            return machine
    known = ", ".join(m.name for m in machines) or "none yet: add it in the admin or a config file"
    raise CommandError(f"no machine named {name!r} in the database; known machines: {known}")


def _where(url: str) -> str:
    """A URL's host and path without its password, for the start-up line."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}{parts.path}"
