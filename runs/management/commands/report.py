"""`manage.py report --runs ID,ID,... --out FILE.html [--lang ja]`: a comparison as one offline HTML file."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.results.comparison import SelectionError, build_comparison, parse_selection
from runs.results.report import render_report


class Command(BaseCommand):
    help = (
        "Write the self-contained HTML report of a comparison (table, parity warnings, charts; "
        "opens offline). Pick runs, configs (their latest succeeded runs) or sweep runs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", default="", help="run ids, e.g. 12,13,14")
        parser.add_argument("--configs", default="", help="config ids: their latest succeeded runs")
        parser.add_argument("--sweep-runs", default="", help="sweep run ids: all their runs")
        parser.add_argument("--baseline", default="", help="the config id the others are measured against")
        parser.add_argument("--out", type=Path, required=True, help="the .html file to write")
        languages = [code for code, _ in settings.LANGUAGES]
        parser.add_argument("--lang", default=settings.LANGUAGE_CODE, choices=languages,
                            help="the report's language (default: English)")

    def handle(self, *args: Any, **options: Any) -> None:
        params = {name: [options[name]] for name in ("runs", "configs", "sweep_runs", "baseline")}
        try:
            selection = parse_selection(params)
            if selection.empty:
                raise CommandError("give --runs, --configs or --sweep-runs")
            comparison = build_comparison(selection, user=None)
        except SelectionError as error:
            raise CommandError(f"--{error.param.replace('_', '-')}: {error.message}") from None
        if comparison is None:
            raise CommandError("no runs to compare")
        out: Path = options["out"]
        out.write_text(render_report(comparison, options["lang"]), encoding="utf-8")
        configs = ", ".join(config.name for config in comparison.configs)
        self.stdout.write(f"wrote {out}: {len(comparison.runs)} runs of {configs}")
