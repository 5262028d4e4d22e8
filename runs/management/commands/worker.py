"""`manage.py worker MACHINE [--team TEAM]`: this box's Celery worker for one machine, on the team's
database and broker.

`make worker MACHINE=spark-1 [TEAM=lab] DATABASE_URL=... REDIS_URL=...` runs it on the team's own
Spark. It refuses, before starting anything, when REDIS_URL or DATABASE_URL is unset (a worker on
its own SQLite or without a broker would never see the team's runs), when the database has no
machine of that name, or when several teams have one and --team does not say which. Then it
becomes `celery worker` on the machine's queue, concurrency 1.
"""
from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from engines import machine_names
from engines.models import Machine
from runs.worker.dispatch import worker_argv


class Command(BaseCommand):
    help = "Run one machine's Celery worker (its queue, concurrency 1) on the team's Postgres and Redis."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("machine", help="the machine's name as the dashboard shows it")
        parser.add_argument("--team", help="the machine's team (needed when several teams use the name)")
        parser.add_argument("--loglevel", default="info")

    def handle(self, *args: Any, **options: Any) -> None:
        machine = find_machine(options["machine"], options["team"])
        queue = machine.queue_name
        self.stdout.write(
            f"worker for {machine.name} on queue {queue} (concurrency 1): database "
            f"{_where(settings.DATABASE_URL)}, broker {_where(settings.REDIS_URL)}"
        )
        self.stdout.flush()
        argv = [sys.executable, *worker_argv(queue, options["loglevel"])]
        os.chdir(settings.BASE_DIR)
        os.execv(sys.executable, argv)


def find_machine(name: str, team: str | None = None) -> Machine:
    """The machine named `name` (or whose queue slug it is), of team `team` when given, after
    checking the worker can reach the team's database and broker."""
    if not settings.REDIS_URL:
        raise CommandError("REDIS_URL is not set: give the team's Redis, e.g. REDIS_URL=redis://dash-host:6379/0")
    if not settings.DATABASE_URL:
        raise CommandError(
            "DATABASE_URL is not set: give the team's Postgres, e.g. "
            "DATABASE_URL=postgres://sparkdash:...@dash-host:5432/sparkdash (this box's SQLite has no runs)"
        )
    try:
        return machine_names.find_machine(name, team, queue_slug=True)
    except machine_names.AmbiguousMachine as exc:
        raise CommandError(str(exc)) from None
    except machine_names.MachineLookupError as exc:
        known = machine_names.known_machines() or "none yet: add it in the admin or a config file"
        raise CommandError(f"{exc} in the database; known machines: {known}") from None
    except DatabaseError as exc:
        raise CommandError(f"cannot read machines from {_where(settings.DATABASE_URL)}: {exc}") from exc


def _where(url: str) -> str:
    """A URL's host and path without its password, for the start-up line."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}{parts.path}"
