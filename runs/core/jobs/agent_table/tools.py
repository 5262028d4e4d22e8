"""The two tools the agent gets, `search` and `read_file`, run against the fixture folder only.

A tool never raises: a bad argument or a path outside the folder comes back to the model as an
"error: ..." result it can read and correct. truth.csv, dotfiles and __pycache__ are not shown.
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from runs.core.jobs.agent_table.fixture import TRUTH_FILE

__all__ = ["MAX_MATCHES", "MAX_READ_LINES", "TOOL_SCHEMAS", "Workspace"]

MAX_READ_LINES = 200
MAX_MATCHES = 100
MAX_LINE_CHARS = 300

# OpenAI's `tools` shape; Ollama's /api/chat takes the same list (its arguments come back as objects).
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search files for a regular expression (or plain text) and return the "
            f"matching lines with their line numbers, at most {MAX_MATCHES}.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "a Python regular expression"},
                    "path": {"type": "string", "description": "a file or folder; all files when omitted"},
                },
                "required": ["pattern"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": f"Read a file's lines, numbered from 1; at most {MAX_READ_LINES} lines per call.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "the file, relative to the workspace"},
                    "start_line": {"type": "integer", "description": "the first line to read (default 1)"},
                    "end_line": {"type": "integer", "description": "the last line to read"},
                },
                "required": ["path"],
            },
        },
    },
]


class ToolError(Exception):
    """A tool call the model got wrong; its message goes back to the model."""


class Workspace:
    """The files a run's tools can see: everything under `root` but truth.csv, dotfiles, __pycache__."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def files(self) -> list[str]:
        paths = (p.relative_to(self.root) for p in self.root.rglob("*") if p.is_file())
        return sorted(p.as_posix() for p in paths if _served(p))

    def call(self, name: str, arguments: dict[str, Any] | None) -> str:
        """Run one tool call; any problem is returned as an "error: ..." text."""
        try:
            if not isinstance(arguments, dict):
                raise ToolError("the arguments must be a JSON object")
            if name == "search":
                return self.search(**_only(arguments, "pattern", "path"))
            if name == "read_file":
                return self.read_file(**_only(arguments, "path", "start_line", "end_line"))
            raise ToolError(f"there is no tool {name!r}; the tools are search and read_file")
        except ToolError as exc:
            return f"error: {exc}"

    def file_read_by(self, name: str, arguments: dict[str, Any] | None) -> str | None:
        """The file a call reads, as the watchdog counts it: read_file's path, or the one file a
        search covers (its path, or no path or "." where the workspace holds one file); None for
        a search over several files."""
        if not isinstance(arguments, dict):
            return None
        path = arguments.get("path")
        if name == "search":
            return self._searched_file(path)
        if name != "read_file" or not isinstance(path, str) or not path.strip():
            return None
        try:
            target = self._resolve(path)
        except ToolError:
            return path.strip()
        return self._name(target) if target.is_file() else None

    def _searched_file(self, path: Any) -> str | None:
        try:
            targets = self._targets(path)
        except ToolError:
            return None
        # Searching the only file there is reads it, whatever the path says.
        return self._name(targets[0]) if len(targets) == 1 else None

    def search(self, pattern: Any = None, path: Any = None) -> str:
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("pattern must be a non-empty string")
        try:
            regex = re.compile(pattern)
        except re.error:
            regex = re.compile(re.escape(pattern))
        hits = [
            f"{self._name(file)}:{number}: {text[:MAX_LINE_CHARS]}"
            for file in self._targets(path)
            for number, text in enumerate(_lines(file), start=1)
            if regex.search(text)
        ]
        if not hits:
            return f"no matches for {pattern!r}"
        more = len(hits) - MAX_MATCHES
        tail = [f"... {more} more matches not shown; narrow the pattern or the path"] if more > 0 else []
        return "\n".join(hits[:MAX_MATCHES] + tail)

    def read_file(self, path: Any = None, start_line: Any = None, end_line: Any = None) -> str:
        file = self._resolve(path)
        if not file.is_file():
            raise ToolError(f"{path} is a folder; read_file reads one file")
        lines = _lines(file)
        start = max(_whole(start_line, "start_line", 1), 1)
        end = _whole(end_line, "end_line", start + MAX_READ_LINES - 1)
        if start > len(lines):
            raise ToolError(f"{self._name(file)} has {len(lines)} lines; start_line {start} is past the end")
        if end < start:
            raise ToolError(f"end_line {end} is before start_line {start}")
        last = min(end, start + MAX_READ_LINES - 1, len(lines))
        head = f"{self._name(file)}, lines {start}-{last} of {len(lines)}"
        if last < min(end, len(lines)):
            head += f" (at most {MAX_READ_LINES} lines per call; continue from line {last + 1})"
        body = "\n".join(f"{n:>5}\t{lines[n - 1][:MAX_LINE_CHARS]}" for n in range(start, last + 1))
        return f"{head}:\n{body}"

    def _targets(self, path: Any) -> list[Path]:
        if path is None or (isinstance(path, str) and path.strip() in ("", ".", "./")):
            return [self.root / name for name in self.files()]
        target = self._resolve(path)
        if target.is_file():
            return [target]
        return sorted(p for p in target.rglob("*") if p.is_file() and _served(p.relative_to(self.root)))

    def _resolve(self, path: Any) -> Path:
        """The served file or folder `path` names; ToolError when it is outside or not there."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("path must be a non-empty string")
        raw = path.strip()
        target = (self.root / raw).resolve()  # an absolute `raw` replaces the root
        if not target.is_relative_to(self.root):
            example = next(iter(self.files()), "name.txt")
            raise ToolError(f"{raw} is outside the workspace; use paths relative to it, e.g. {example}")
        if not target.exists() or not _served(target.relative_to(self.root)):
            raise ToolError(f"no such file or folder: {raw}; the workspace holds {', '.join(self.files())}")
        return target

    def _name(self, file: Path) -> str:
        return file.relative_to(self.root).as_posix()


def _served(relative: Path) -> bool:
    parts = PurePosixPath(relative.as_posix()).parts
    hidden = any(part.startswith(".") or part == "__pycache__" for part in parts)
    return relative.as_posix() != TRUTH_FILE and not hidden


def _lines(file: Path) -> list[str]:
    return file.read_text(encoding="utf-8", errors="replace").splitlines()


def _whole(value: Any, name: str, default: int) -> int:
    """A line number from the model: an int, a whole float or a numeric string; None is `default`."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ToolError(f"{name} must be a whole number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ToolError(f"{name} must be a whole number, not {value!r}") from None
    if not number.is_integer():
        raise ToolError(f"{name} must be a whole number, not {value!r}")
    return int(number)


def _only(arguments: dict[str, Any], *names: str) -> dict[str, Any]:
    unknown = sorted(set(arguments) - set(names))
    if unknown:
        raise ToolError(f"unknown arguments {', '.join(unknown)}; this tool takes {', '.join(names)}")
    return arguments
