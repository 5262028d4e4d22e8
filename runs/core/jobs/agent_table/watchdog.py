"""The read-loop watchdog: count reads per file; note at the 12th, withdraw the tools at the 20th.

Agents fall into loops that read one file again and again with shifting ranges, so the count is
per file, whatever the range or search pattern: read_file calls and searches that cover that file
alone (naming it, or with no path in a workspace of one file; Workspace.file_read_by decides).
Thresholds from the seed: completed runs read one file at most 10 times, looping runs 20 to 150.
A pure state machine: the agent loop asks it what to do and does it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from measure.read_loop import NOTE_AT, WITHDRAW_AT

__all__ = ["NOTE_AT", "UNAVAILABLE_NOTE", "WITHDRAWN_NOTE", "WITHDRAW_AT", "Decision", "ReadWatchdog"]

WITHDRAWN_NOTE = "Not executed: the tools are withdrawn. Write your answer now from what you have read."
UNAVAILABLE_NOTE = (
    "Not executed: tools are unavailable now. Reply with your answer as text, from what you have read."
)

Verdict = Literal["answer", "retry", "stop"]


def read_note(file: str, reads: int) -> str:
    return (
        f"Note: you have read {file} {reads} times. You have what you need: stop reading and "
        "write your answer from what you have read so far."
    )


def withdraw_note(file: str, reads: int) -> str:
    return (
        f"Not executed: this would be read number {reads} of {file}. The tools are withdrawn; "
        "write your answer now from what you have read so far."
    )


@dataclass(frozen=True)
class Decision:
    """Whether to run a tool call, the note to append to its result, and the file's read count."""

    execute: bool
    note: str | None = None
    reads: int = 0


class ReadWatchdog:
    """Per-run state: reads per file, whether tools are still offered, whether the retry is used."""

    def __init__(self, note_at: int = NOTE_AT, withdraw_at: int = WITHDRAW_AT) -> None:
        self.note_at = note_at
        self.withdraw_at = withdraw_at
        self.reads: Counter[str] = Counter()
        self.tools_offered = True
        self.retried = False

    def on_call(self, file: str | None) -> Decision:
        """Decide on one tool call from a reply to a request that offered tools.

        :param file: the file the call reads (None: it reads no one file, e.g. a search everywhere).
        """
        if not self.tools_offered:
            # An earlier call of the same reply withdrew the tools.
            return Decision(False, WITHDRAWN_NOTE, self.reads[file] if file else 0)
        if file is None:
            return Decision(True)
        self.reads[file] += 1
        reads = self.reads[file]
        if reads >= self.withdraw_at:
            self.tools_offered = False
            return Decision(False, withdraw_note(file, reads), reads)
        return Decision(True, read_note(file, reads) if reads >= self.note_at else None, reads)

    def on_reply_without_tools(self, has_tool_calls: bool) -> Verdict:
        """A reply to a request sent without tools: an answer, or a tool call that is not run.

        The first such tool call earns one more request (with UNAVAILABLE_NOTE); a second stops.
        """
        if not has_tool_calls:
            return "answer"
        if self.retried:
            return "stop"
        self.retried = True
        return "retry"

    def max_reads(self) -> int:
        return max(self.reads.values(), default=0)

    @property
    def intervened(self) -> bool:
        """Whether the run got the read note or lost its tools (an answer after it is "rescued")."""
        return not self.tools_offered or self.max_reads() >= self.note_at
