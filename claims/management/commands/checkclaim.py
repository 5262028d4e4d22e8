"""`manage.py checkclaim FILE --engine NAME [--config NAME] [--runs N] [--wait] [--team NAME]`: import a
claim (or find it: the same file twice is one claim), check it on an engine, print the check as JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from claims.checking import check_json, refresh_check, start_check
from claims.core.schema import ClaimRefused
from claims.intake import import_claim_path
from claims.models import Check
from runs.management.commands.bench import find_config
from runs.management.commands.importruns import find_engine


class Command(BaseCommand):
    help = "Check a published claim (a claim file, a recipe's claim or a result file) on an engine here."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file", type=Path, help="the claim file (docs/claims.md) or another tool's result file"
        )
        parser.add_argument("--engine", required=True, help="the engine to check it on")
        parser.add_argument("--config", help="the config whose model to run (default: the engine's only one)")
        parser.add_argument("--runs", type=int, default=3, help="runs per claimed level (default 3)")
        parser.add_argument("--team", help="the engine's team (needed when several teams have the name)")
        parser.add_argument("--wait", action="store_true", help="wait for the runs and print the verdicts")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait at most")

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["runs"] <= 50:
            raise CommandError("--runs must be 1 to 50")
        engine = find_engine(options["engine"], options["team"])
        config = find_config(options["config"], engine.machine.team.name) if options["config"] else None
        try:
            claim, _new = import_claim_path(options["file"], engine.machine.team)
            check = start_check(claim, engine, config=config, repetitions=options["runs"])
        except (ClaimRefused, ValueError) as exc:
            raise CommandError(str(exc)) from None
        # Without a broker the runs go on a thread of this process, which must outlive them.
        if options["wait"] or settings.SPARKDASH_WORKER == "inprocess":
            check = _wait(check, options["timeout"])
        self.stdout.write(json.dumps(check_json(check), indent=2, ensure_ascii=False, default=str))


def _wait(check: Check, timeout: float) -> Check:
    deadline = time.monotonic() + timeout
    while True:
        check = refresh_check(Check.objects.select_related("claim", "engine", "config").get(pk=check.pk))
        if check.status != Check.Status.RUNNING:
            return check
        if time.monotonic() > deadline:
            raise CommandError(f"check {check.pk} still running after {timeout:.0f} s")
        time.sleep(0.5)
