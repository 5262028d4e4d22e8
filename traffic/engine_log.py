"""The engine's own log, followed by its relay for the lines worth a warning on the Traffic page.

llama-server logs "exceeds cache size limit" when a prompt's state is too large for its RAM
cache (--cache-ram) and is dropped: the conversation's next step recomputes its whole prompt.
The relay reads the engine's log file (Engine.log_path) from its end, as tail -f does, at each
heartbeat; an engine without a log file gives no such warning (the records' own prefix-cache
discard still shows).
"""
from __future__ import annotations

from pathlib import Path

from engines.logparse import parse_line, read_new_lines


class EngineLogWatch:
    """Where the followed log file is read up to; `follow` a new path to switch files."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.position: int | None = None

    def follow(self, log_path: str) -> None:
        """Follow `log_path` (blank: none) from its current end; the same path keeps its place."""
        path = Path(log_path) if log_path else None
        if path != self.path:
            self.path, self.position = path, None
            if path is not None:
                _, self.position = read_new_lines(path, None)

    def cache_discards(self) -> list[str]:
        """The log's lines since the last look that say the engine dropped a prompt from its cache."""
        if self.path is None:
            return []
        lines, self.position = read_new_lines(self.path, self.position)
        return [line for line in lines if (event := parse_line(line)) and event.event == "cache-discard"]
