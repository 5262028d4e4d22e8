"""The simulator's engine log: llama-server's lines, on stderr and optionally appended to a file.

A managed simulator's stderr is the run's engine log; an external one (the demo's Ollama
stand-in) also appends to a file that the engine's log_path tails, as Ollama's log is tailed.
The lines are llama-server's, so engines.logparse reads them whatever API the simulator speaks.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from measure import pooled

from .schedule import Schedule

__all__ = ["Log", "acceptance_line", "engine_log"]

Log = Callable[[str], None]


def engine_log(path: str | Path | None = None) -> Log:
    """A log writer: every line to stderr, and appended to `path` when given (made if missing)."""
    target = Path(path) if path else None
    if target:
        target.parent.mkdir(parents=True, exist_ok=True)

    def write(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        if target:
            with target.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    return write


def acceptance_line(task: str, sched: Schedule) -> str | None:
    """llama-server's per-request draft acceptance line (b9829+ wording), or None without drafts."""
    if not sched.draft_tokens:
        return None
    rate = pooled.acceptance(sched.accepted_tokens, sched.draft_tokens) or 0.0
    mean_len = pooled.tokens_per_verification(sched.accepted_tokens, sched.verifications) or 0.0
    return (
        f"slot print_timing: id  0 | task {task} | draft acceptance = {rate:.5f} "
        f"({sched.accepted_tokens:5d} accepted / {sched.draft_tokens:5d} generated), "
        f"mean len = {mean_len:5.2f}"
    )
