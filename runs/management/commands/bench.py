"""`manage.py bench CONFIG --job speed --reps N --wait`: start a run from a script, print it as JSON."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.models import EngineConfig
from runs import services
from runs.models import Run


class Command(BaseCommand):
    help = "Start a run of CONFIG and print it as JSON (with --wait: once it has finished)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("config", help="config name")
        parser.add_argument("--job", default="speed")
        parser.add_argument("--reps", type=int)
        parser.add_argument("--warmup", type=int)
        parser.add_argument("--max-tokens", type=int)
        parser.add_argument("--lengths", help="lookahead: 0,2,4,8,12; needle: prompt tokens, 32768,65536")
        parser.add_argument("--depths", help="needle: where the needle sits, e.g. 0.1,0.5,0.9")
        parser.add_argument("--levels", help="concurrency: requests at once, e.g. 1,2,4,8,16")
        parser.add_argument(
            "--answer-tokens", type=int, help="concurrency, prefix-cache, agent-table, needle: answer length"
        )
        parser.add_argument("--steps", type=int, help="prefix-cache: conversation steps")
        parser.add_argument("--bytes-per-step", type=int, help="prefix-cache: source bytes per step")
        parser.add_argument("--fixture", help="agent-table: a fixture folder (source file + truth.csv)")
        parser.add_argument("--max-steps", type=int, help="agent-table: step limit")
        parser.add_argument("--dataset", help="mmlu-pro, evalplus: a dataset file or folder, or sample")
        parser.add_argument("--limit", type=int, help="mmlu-pro, evalplus: ask at most this many questions")
        parser.add_argument("--num-fewshot", type=int, help="mmlu-pro: chain-of-thought examples per prompt")
        parser.add_argument("--suite", help="evalplus: humaneval or mbpp")
        parser.add_argument("--requests", type=Path, help="replay: a JSONL file of recorded request bodies")
        parser.add_argument("--wait", action="store_true", help="wait for the run to finish")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait at most")

    def handle(self, *args: Any, **options: Any) -> None:
        config = EngineConfig.objects.filter(name=options["config"]).first()
        if config is None:
            raise CommandError(f"no config named {options['config']!r}")
        names: tuple[str, ...] = ("reps", "warmup", "max_tokens", "lengths", "levels", "answer_tokens")
        names += ("steps", "bytes_per_step", "fixture", "max_steps", "depths")
        names += ("dataset", "limit", "num_fewshot", "suite")
        params = {k: options[k] for k in names if options[k] is not None}
        if options["requests"]:
            params["requests"] = _read_text(options["requests"])
        try:
            run = services.start_run(config, options["job"], params)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        # Without a broker the job runs on a thread of this process, which must outlive it.
        if options["wait"] or settings.SPARKDASH_WORKER == "inprocess":
            run = self._wait(run.pk, options["timeout"])
        self.stdout.write(json.dumps(run.to_dict(), indent=2, ensure_ascii=False))
        if run.status == Run.Status.FAILED:
            raise CommandError(f"run {run.pk} failed: {run.error}")

    def _wait(self, run_id: int, timeout: float) -> Run:
        deadline = time.monotonic() + timeout
        while True:
            run = Run.objects.select_related("config__engine", "machine").get(pk=run_id)
            if run.is_finished:
                return run
            if time.monotonic() > deadline:
                raise CommandError(f"run {run_id} still {run.status} after {timeout:.0f} s")
            time.sleep(0.5)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
