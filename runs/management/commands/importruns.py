"""`manage.py importruns PATH... --config NAME [--accept-mismatch]`: other tools' result files as runs,
printed as JSON. Every file is read and checked against the config before any is stored."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.models import Engine
from runs.actions.imports import NotStored, import_file, mismatches_with
from runs.core.imports import TOOLS, Unreadable
from runs.core.imports.detect import read_results
from runs.core.imports.match import Mismatched
from runs.management.commands.bench import find_config


class Command(BaseCommand):
    help = (f"Import result files of {', '.join(TOOLS.values())} as runs of CONFIG; prints one JSON "
            "object per run added. A file imported before adds nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, help="result files, each read whole")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--config", help="the config the results were measured with")
        target.add_argument("--engine", help="the engine they were measured on: a config named after the "
                            "tool and the file's model is made there (or reused)")
        parser.add_argument("--team", help="the config's or engine's team (needed when several teams have "
                            "the name)")
        parser.add_argument("--accept-mismatch", action="store_true",
                            help="import a file whose model, engine kind or backend contradicts the config "
                            "anyway; each run records what was accepted, both sides named")

    def handle(self, *args: Any, **options: Any) -> None:
        target = (find_config(options["config"], options["team"]) if options["config"]
                  else find_engine(options["engine"], options["team"]))
        files = [(path, _read(path)) for path in options["paths"]]
        accept = options["accept_mismatch"]
        for path, data in files:  # every file read through and matched before any is stored
            try:
                found = mismatches_with(read_results(path.name, data), target)
            except Unreadable as exc:
                raise CommandError(str(exc)) from None
            if found and not accept:
                raise CommandError(str(Mismatched(path.name, found)))
        for path, data in files:
            try:
                done = import_file(path.name, data, target, accept_mismatch=accept)
            except (Unreadable, Mismatched, NotStored) as exc:
                raise CommandError(str(exc)) from None
            for run in done.added:
                self.stdout.write(json.dumps(_line(run), ensure_ascii=False))
            if done.already:
                levels = len(done.file.levels)
                self.stderr.write(f"{path.name}: {done.already} of {levels} levels were imported before; "
                                  "not added again")


def _line(run: Any) -> dict[str, Any]:
    imported = run.provenance["imported_from"]
    accepted = {"accepted_mismatch": imported["accepted_mismatch"]} if "accepted_mismatch" in imported else {}
    return {"id": run.pk, "tool": imported["tool"], "version": imported["version"],
            "level": imported["level"], "config": run.config.name, "revision": run.revision.number,
            **accepted, "summary": run.summary}


def find_engine(name: str, team: str | None) -> Engine:
    """The engine named ``name`` (in ``team`` when given): names are unique per team only."""
    engines = Engine.objects.filter(name=name).select_related("machine__team")
    if team:
        engines = engines.filter(machine__team__name=team)
    found = list(engines[:2])
    if len(found) != 1:
        where = f" in team {team!r}" if team else ""
        raise CommandError(f"no engine named {name!r}{where}" if not found
                           else f"more than one team has an engine named {name!r}: give --team")
    return found[0]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
