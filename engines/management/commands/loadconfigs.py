"""`manage.py loadconfigs FILE.yaml`: upsert machines, engines and configs by name."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.configs_file import ConfigFileError, load_text


class Command(BaseCommand):
    help = "Create or update machines, engines and configs by name from a YAML file (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            counts = load_text(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        except (ConfigFileError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        summary = ", ".join(f"{n} {section}" for section, n in counts.items())
        self.stdout.write(f"loaded {summary} from {path}")
