"""`manage.py exportruns RUN_ID... --format llm-d`: finished runs as llm-d Benchmark Reports (v0.2.1)."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.models import Run
from runs.results.llmd import report


class Command(BaseCommand):
    help = ("Print finished runs as llm-d-benchmark's Benchmark Report v0.2.1, one JSON object per line "
            "(or one object for one run).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("runs", nargs="+", type=int, help="run ids")
        parser.add_argument("--format", choices=["llm-d"], default="llm-d", help="the report format")

    def handle(self, *args: Any, **options: Any) -> None:
        ids = options["runs"]
        found = {run.pk: run for run in Run.objects.filter(pk__in=ids).select_related(
            "config__engine", "machine", "revision", "created_by")}
        missing = [str(pk) for pk in ids if pk not in found]
        if missing:
            raise CommandError(f"no run with id {', '.join(missing)}")
        unfinished = [str(pk) for pk in ids if found[pk].status != Run.Status.SUCCEEDED]
        if unfinished:
            raise CommandError(f"run {', '.join(unfinished)} has not succeeded: only a succeeded run has a "
                               "report")
        indent = 2 if len(ids) == 1 else None
        for pk in ids:
            self.stdout.write(json.dumps(report(found[pk]), indent=indent, ensure_ascii=False))
