"""`manage.py runs [--format csv|md|json] [--job JOB] [--status STATUS] [--machine NAME] [--limit N]`:
the flat results table (runs.results.flat), the newest runs first, on standard output."""
from __future__ import annotations

import csv
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.core import registry
from runs.models import Run
from runs.results.flat import columns, flat_rows, markdown
from teams.csvsafe import safe_cell


class Command(BaseCommand):
    help = ("Print the flat results table: one row per run and load level, with machine, engine, model, "
            "quantisation, draft method, lookahead, acceptance, decode, prefill, TTFT, energy and headline.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", default="md", choices=("csv", "md", "json"), help="default: md")
        parser.add_argument("--job", choices=sorted(registry.JOBS), help="only runs of this job")
        parser.add_argument("--status", choices=Run.Status.values, help="only runs with this status")
        parser.add_argument("--machine", help="only runs on the machine of this name (any team)")
        parser.add_argument("--limit", type=int, default=1000, help="the newest N runs (default 1000)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        picked = Run.objects.select_related("config__engine__machine", "revision")
        runs = picked.defer("engine_log")
        for option, lookup in (("job", "job"), ("status", "status"), ("machine", "machine__name")):
            if options[option]:
                runs = runs.filter(**{lookup: options[option]})
        rows, shown = flat_rows(runs.order_by("-created")[: options["limit"]]), columns()
        if options["format"] == "json":
            self.stdout.write(json.dumps({"columns": shown, "rows": rows}, indent=1))
        elif options["format"] == "csv":
            writer = csv.DictWriter(self.stdout, fieldnames=shown, lineterminator="\n")
            writer.writeheader()
            writer.writerows({c: safe_cell(row.get(c)) for c in shown} for row in rows)
        else:
            self.stdout.write(markdown(rows, shown), ending="")
