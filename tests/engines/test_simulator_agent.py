"""The simulator's scripted agent: its read loop, its table, and its tool calls on both wire formats."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engines.simulator import SimProfile, serve_in_thread
from engines.simulator.agent import MAX_CALLS, SEARCH_PATTERN, next_turn, offers_tools, route_rows
from engines.simulator.wire import text

pytestmark = pytest.mark.backend_free

TASK = {"role": "user", "content": "List every HTTP API route that server.py handles."}
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
SEARCH_RESULT = (
    'server.py:12:         if method == "GET" and path == "/health":\n'
    'server.py:30:         if method == "DELETE" and (m := match("/api/users/{id}", path)):'
)


def page(start: int, last: int, total: int, lines: dict[int, str] | None = None) -> str:
    """A read_file result as the agent-table job's tool writes it."""
    body = "\n".join(f"{n:>5}\t{(lines or {}).get(n, 'pass')}" for n in range(start, last + 1))
    return f"server.py, lines {start}-{last} of {total}:\n{body}"


def conversation(*results: str) -> list[dict[str, Any]]:
    return [TASK] + [{"role": "tool", "content": result} for result in results]


def test_it_searches_first_when_nothing_was_read() -> None:
    turn = next_turn([TASK], tools_offered=True)
    assert (turn.tool, turn.arguments) == ("search", {"pattern": SEARCH_PATTERN})


def test_it_reads_the_file_its_search_named() -> None:
    turn = next_turn(conversation(SEARCH_RESULT), tools_offered=True)
    assert (turn.tool, turn.arguments) == ("read_file", {"path": "server.py", "start_line": 1})


def test_it_reads_the_file_the_task_names_when_the_search_found_nothing() -> None:
    messages = [{"role": "user", "content": "Which routes does app/main.js handle?"},
                {"role": "tool", "content": "no matches for 'x'"}]
    assert next_turn(messages, tools_offered=True).arguments == {"path": "app/main.js", "start_line": 1}


def test_it_pages_through_the_file_and_starts_over_at_the_top() -> None:
    after_first = next_turn(conversation(SEARCH_RESULT, page(1, 200, 450)), tools_offered=True)
    after_last = next_turn(conversation(SEARCH_RESULT, page(401, 450, 450)), tools_offered=True)
    assert after_first.arguments == {"path": "server.py", "start_line": 201}
    assert after_last.arguments == {"path": "server.py", "start_line": 1}


def test_it_keeps_reading_after_a_note_to_stop() -> None:
    noted = page(1, 40, 40) + "\n\nNote: you have read server.py 12 times. Stop reading."
    assert next_turn(conversation(SEARCH_RESULT, noted), tools_offered=True).tool == "read_file"


def test_it_answers_with_the_routes_it_read_once_tools_are_withdrawn() -> None:
    read = page(1, 3, 3, {2: '        if method == "POST" and path == "/api/login":'})
    turn = next_turn(conversation(SEARCH_RESULT, read, read), tools_offered=False)
    assert turn.tool is None
    assert turn.text.splitlines()[2:] == [
        "| method | path | line |", "| --- | --- | --- |", "| POST | /api/login | 2 |",
        "| GET | /health | 12 |", "| DELETE | /api/users/{id} | 30 |",
    ]


def test_it_answers_after_max_calls_even_with_tools_offered() -> None:
    turn = next_turn(conversation(*[page(1, 1, 1)] * MAX_CALLS), tools_offered=True)
    assert (turn.tool, turn.text) == (None, "I found no route lines in what I read.")


def test_it_reads_javascript_routes_and_skips_lines_without_a_method() -> None:
    lines = {
        1: '  if (method === "GET" && (params = matchPath("/notes/:id", pathname))) {',
        2: '  if ((found = match("/api/projects/{id}", path)) !== null) {',
        3: '  const limit = req.url.startsWith("/api/uploads") ? MAX_UPLOAD : MAX_BODY;',
    }
    assert route_rows([page(1, 3, 3, lines)]) == [("GET", "/notes/:id", 1)]


def test_it_sees_tools_only_in_a_non_empty_list() -> None:
    assert offers_tools({"tools": TOOLS}) and not offers_tools({"tools": []}) and not offers_tools({})


@pytest.fixture
def sim() -> Iterator[str]:
    with serve_in_thread(SimProfile(decode_tps=1000, ttft_ms=2)) as server:
        yield server.url


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(url + path, json={"model": "sim", "stream": False} | body, timeout=10)
    response.raise_for_status()
    return response.json()


def test_it_calls_a_tool_in_openai_shape_with_the_call_as_its_tokens(sim: str) -> None:
    data = post(sim, "/v1/chat/completions", {"messages": [TASK], "tools": TOOLS})
    choice = data["choices"][0]
    call = choice["message"]["tool_calls"][0]
    assert (choice["finish_reason"], call["type"]) == ("tool_calls", "function")
    assert call["function"]["name"] == "search"
    assert json.loads(call["function"]["arguments"]) == {"pattern": SEARCH_PATTERN}
    sent = json.dumps({"name": "search", "arguments": {"pattern": SEARCH_PATTERN}})
    assert data["usage"]["completion_tokens"] == data["timings"]["predicted_n"] == -(-len(sent) // 4)


def test_it_calls_a_tool_in_ollama_shape_with_arguments_as_an_object(sim: str) -> None:
    data = post(sim, "/api/chat", {"messages": conversation(SEARCH_RESULT), "tools": TOOLS})
    call = data["message"]["tool_calls"][0]["function"]
    assert (data["done"], data["done_reason"]) == (True, "stop")
    assert call == {"name": "read_file", "arguments": {"path": "server.py", "start_line": 1}}
    assert data["eval_count"] > 1 and data["eval_duration"] > 0


def test_it_answers_the_table_in_text_when_the_tools_are_gone(sim: str) -> None:
    data = post(sim, "/api/chat", {"messages": conversation(SEARCH_RESULT)})
    assert "tool_calls" not in data["message"]
    assert "| GET | /health | 12 |" in data["message"]["content"]


def test_it_cuts_a_call_longer_than_the_limit_to_text(sim: str) -> None:
    data = post(sim, "/v1/chat/completions", {"messages": [TASK], "tools": TOOLS, "max_tokens": 3})
    choice = data["choices"][0]
    assert (choice["finish_reason"], data["usage"]["completion_tokens"]) == ("length", 3)
    assert "tool_calls" not in choice["message"] and choice["message"]["content"] == '{"name": "se'


def test_it_keeps_filler_text_for_requests_without_tools(sim: str) -> None:
    data = post(sim, "/api/chat", {"messages": [TASK], "options": {"num_predict": 5}})
    assert data["message"] == {"role": "assistant", "content": text(0, 5)}
