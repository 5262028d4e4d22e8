"""The simulator's scripted agent: how it answers a non-streamed chat request that offers tools.

The simulator has no model, so a request with `tools` gets a fixed, deterministic script that
plays the read loop the field saw (an agent reading one file again and again):
1. with no tool result in the conversation yet, one `search` for lines comparing a method;
2. then `read_file` on the file that search named (or the first file name the task's text gives),
   page after page of at most 200 lines, starting over at the top once it has read the end, for
   as long as tools are offered: it ignores any note to stop, as looping models did;
3. once a request offers no tools (a watchdog withdrew them), or after MAX_CALLS tool results
   (so a client with no watchdog still gets an answer), it answers in text: a markdown table
   `| method | path | line |` of the route lines it saw in the tool results.
The table comes only from what the tools returned, so grading it is a real grade of what it read.
Pure functions of the request's messages; the simulator's schedule times the reply's tokens.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_CALLS", "SEARCH_PATTERN", "Turn", "next_turn", "offers_tools", "route_rows"]

MAX_CALLS = 60
PAGE_LINES = 200
SEARCH_PATTERN = r"method\s*===?"  # method == (Python) or method === (JavaScript)
METHODS = "GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS"
# A route's if-statement: a method compared with a verb, then the path as the first "/..." literal.
ROUTE = re.compile(rf"""\bmethod\s*===?\s*["']({METHODS})["'].*?["'](/[^"'\s]*)["']""")
SEARCH_HIT = re.compile(r"^([\w./-]+):(\d+): (.*)$")
READ_HEAD = re.compile(r"^([\w./-]+), lines (\d+)-(\d+) of (\d+)")
READ_LINE = re.compile(r"^\s*(\d+)\t(.*)$")
FILE_NAME = re.compile(r"\b[\w/-]+\.(?:py|js|ts|go|rb|php|java|rs)\b")


@dataclass(frozen=True)
class Turn:
    """One scripted reply: a tool call (name and arguments) or, when `tool` is None, the text."""

    text: str = ""
    tool: str | None = None
    arguments: dict[str, Any] | None = None

    def content(self) -> str:
        """What the reply's tokens spell: the call as JSON, or the text."""
        if self.tool is None:
            return self.text
        return json.dumps({"name": self.tool, "arguments": self.arguments})


def offers_tools(body: dict[str, Any]) -> bool:
    """Whether a chat request body offers tools (OpenAI's and Ollama's `tools` list alike)."""
    tools = body.get("tools")
    return isinstance(tools, list) and len(tools) > 0


def next_turn(messages: list[dict[str, Any]], tools_offered: bool) -> Turn:
    """The script's reply to a conversation (see the module docstring)."""
    results = [_content(m) for m in messages if m.get("role") == "tool"]
    if not tools_offered or len(results) >= MAX_CALLS:
        return Turn(text=answer(results))
    if not results:
        return Turn(tool="search", arguments={"pattern": SEARCH_PATTERN})
    file = _file_named(results, [_content(m) for m in messages if m.get("role") in ("user", "system")])
    if file is None:
        return Turn(text=answer(results))
    return Turn(tool="read_file", arguments={"path": file, "start_line": _next_start(results, file)})


def answer(results: list[str]) -> str:
    """The final answer: a markdown table of the route lines in the tool results."""
    rows = route_rows(results)
    if not rows:
        return "I found no route lines in what I read."
    table = ["| method | path | line |", "| --- | --- | --- |"]
    table += [f"| {method} | {path} | {line} |" for method, path, line in rows]
    return "The routes I read:\n\n" + "\n".join(table)


def route_rows(results: Iterable[str]) -> list[tuple[str, str, int]]:
    """(method, path, line) of every route line seen in read_file or search results, by line."""
    found: set[tuple[str, str, int]] = set()
    for number, text in _numbered_lines(results):
        match = ROUTE.search(text)
        if match:
            found.add((match.group(1), match.group(2), number))
    return sorted(found, key=lambda row: (row[2], row[0], row[1]))


def _numbered_lines(results: Iterable[str]) -> Iterable[tuple[int, str]]:
    for result in results:
        for line in result.splitlines():
            hit = SEARCH_HIT.match(line)
            if hit:
                yield int(hit.group(2)), hit.group(3)
            elif read := READ_LINE.match(line):
                yield int(read.group(1)), read.group(2)


def _file_named(results: list[str], task_texts: list[str]) -> str | None:
    """The file to read: the first one a search result or read names, else one the task names."""
    for result in results:
        for line in result.splitlines():
            hit = SEARCH_HIT.match(line) or READ_HEAD.match(line)
            if hit:
                return hit.group(1)
    for text in task_texts:
        named = FILE_NAME.search(text)
        if named:
            return named.group(0)
    return None


def _next_start(results: list[str], file: str) -> int:
    """The page after the last one read of `file`; the top again once its end was read."""
    for result in reversed(results):
        head = READ_HEAD.match(result)
        if head and head.group(1) == file:
            last, total = int(head.group(3)), int(head.group(4))
            return last + 1 if last < total else 1
    return 1


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""
