import json

import httpx
import pytest

from engines.clients import client_for
from engines.clients.base import GenerationRequest
from runs.core.jobs.agent_table import AgentTableJob, load_fixture, run_agent_table
from runs.core.jobs.agent_table.chat import chat, merge_system
from runs.core.jobs.agent_table.tools import MAX_MATCHES, TOOL_SCHEMAS, Workspace
from runs.core.jobs.agent_table.watchdog import UNAVAILABLE_NOTE
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free

ROUTES_47 = load_fixture("routes_47")
ROUTES_12 = load_fixture("routes_12")
ASK = [{"role": "user", "content": "go"}]


def table(fixture):
    rows = "\n".join(f"| {r.method} | {r.path} | {r.line} |" for r in fixture.truth)
    return "Here is the table.\n\n| Method | Path | Line |\n|---|---|---|\n" + rows


def openai_call(name, arguments, call_id="call_1"):
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def openai_text(text):
    return {"role": "assistant", "content": text}


def ollama_call(name, arguments):
    call = {"function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


class ScriptedEngine:
    """A fake engine answering each request with the next scripted assistant message."""

    def __init__(self, messages, kind="llama-server"):
        self.messages = list(messages)
        self.kind = kind
        self.requests = []

    def handle(self, request):
        self.requests.append(json.loads(request.content))
        message = self.messages.pop(0)
        if isinstance(message, httpx.Response):
            return message
        if self.kind == "ollama":
            return httpx.Response(200, json={
                "message": message, "done": True, "done_reason": "stop", "eval_count": 30,
                "eval_duration": 1_000_000_000, "prompt_eval_count": 900, "prompt_eval_duration": 100_000_000,
            })
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return httpx.Response(200, json={
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 30},
        })

    def client(self):
        return client_for(self.kind, "http://engine", transport=httpx.MockTransport(self.handle))


async def run(engine, fixture="routes_47", **job_fields):
    progress = CollectingProgress()
    async with engine.client() as client:
        summary = await run_agent_table(client, AgentTableJob("agent", fixture, **job_fields), progress)
    return summary, progress


def last_content(body):
    return body["messages"][-1]["content"]


def two_file_fixture(tmp_path):
    """routes_47 with a second file (docs/notes.md), so a search without a path reads no one file."""
    for name in ("server.py", "truth.csv"):
        (tmp_path / name).write_text((ROUTES_47.root / name).read_text())
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("route notes\n")
    return tmp_path


def looping_reads(n):
    shifting = ({"path": "server.py", "start_line": 1 + 10 * i, "end_line": 60 + 10 * i} for i in range(n))
    return [openai_call("read_file", arguments, f"call_{i}") for i, arguments in enumerate(shifting)]


# --- the tools ---

def test_it_offers_search_and_read_file():
    assert [t["function"]["name"] for t in TOOL_SCHEMAS] == ["search", "read_file"]
    assert TOOL_SCHEMAS[1]["function"]["parameters"]["required"] == ["path"]


def test_it_reads_numbered_lines_at_most_200_per_call():
    workspace = Workspace(ROUTES_47.root)
    first = workspace.call("read_file", {"path": "server.py", "start_line": 241, "end_line": 241})
    assert first.splitlines() == [
        "server.py, lines 241-241 of 540:", '  241\t        if method == "GET" and path == "/health":',
    ]
    long = workspace.read_file("server.py", "101", 900).splitlines()
    assert long[0] == "server.py, lines 101-300 of 540 (at most 200 lines per call; continue from line 301):"
    assert len(long) == 201 and long[-1].startswith("  300\t")
    assert workspace.read_file("server.py").startswith("server.py, lines 1-200 of 540:\n    1\t")


def test_it_searches_with_a_regex_or_plain_text_and_caps_the_matches():
    workspace = Workspace(ROUTES_12.root)
    hits = workspace.call("search", {"pattern": r'method === "(PUT|DELETE)"'}).splitlines()
    assert hits == [
        'server.js:107:   if (method === "DELETE" && pathname === "/sessions/current") {',
        'server.js:133:   if (method === "PUT" && (params = matchPath("/notes/:id", pathname))) {',
        'server.js:142:   if (method === "DELETE" && (params = matchPath("/notes/:id", pathname))) {',
    ]
    assert workspace.call("search", {"pattern": "matchPath(", "path": "server.js"}).count("\n") == 6
    capped = Workspace(ROUTES_47.root).call("search", {"pattern": "e"}).splitlines()
    assert len(capped) == MAX_MATCHES + 1 and capped[-1].startswith("... ")
    assert workspace.call("search", {"pattern": "no such text"}) == "no matches for 'no such text'"


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("read_file", {"path": "../routes_47/server.py"}, "outside the workspace"),
        ("read_file", {"path": "/etc/passwd"}, "outside the workspace"),
        ("read_file", {"path": "truth.csv"}, "no such file or folder: truth.csv; the workspace holds"),
        ("search", {"pattern": "GET", "path": "truth.csv"}, "no such file"),
        ("read_file", {"path": "server.js", "start_line": 500}, "server.js has 181 lines"),
        ("read_file", {"path": "server.js", "start_line": 9, "end_line": 3}, "end_line 3 is before"),
        ("read_file", {"path": "server.js", "start_line": "ten"}, "start_line must be a whole number"),
        ("read_file", {"path": "."}, "is a folder"),
        ("read_file", {}, "path must be a non-empty string"),
        ("read_file", None, "arguments must be a JSON object"),
        ("search", {"pattern": "x", "regex": True}, "unknown arguments regex"),
        ("run_shell", {"cmd": "cat truth.csv"}, "there is no tool 'run_shell'"),
    ],
)
def test_it_returns_a_tool_error_instead_of_raising(name, arguments, error):
    result = Workspace(ROUTES_12.root).call(name, arguments)
    assert result.startswith("error: ") and error in result


# --- one chat request ---

def test_it_merges_every_system_message_into_the_first():
    merged = merge_system([
        {"role": "system", "content": "A"},
        {"role": "user", "content": "q"},
        {"role": "system", "content": "B"},
    ])
    assert merged == [{"role": "system", "content": "A\n\nB"}, {"role": "user", "content": "q"}]


async def test_it_reads_openai_tool_calls_whose_arguments_are_a_json_string():
    bad = {"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{not json"}}
    message = openai_call("read_file", {"path": "server.py"}) | {"content": "Reading."}
    message["tool_calls"].append(bad)
    engine = ScriptedEngine([message])
    async with engine.client() as client:
        reply = await chat(client, GenerationRequest("agent", ASK, extra={"x": 1}))
    assert reply.text == "Reading."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_1", "read_file", {"path": "server.py"}), ("c2", "search", None),
    ]
    assert reply.figures.output_tokens == 30
    body = engine.requests[0]
    assert body["stream"] is False and "stream_options" not in body and body["x"] == 1


async def test_it_reads_ollama_tool_calls_whose_arguments_are_an_object():
    engine = ScriptedEngine([ollama_call("search", {"pattern": "GET"})], kind="ollama")
    async with engine.client() as client:
        reply = await chat(client, GenerationRequest("agent", ASK))
    assert [(c.name, c.arguments, c.raw_arguments) for c in reply.tool_calls] == [
        ("search", {"pattern": "GET"}, '{"pattern": "GET"}'),
    ]
    assert reply.figures.output_tokens == 30
    assert reply.figures.decode_tps == pytest.approx(30.0)
    assert engine.requests[0]["stream"] is False


# --- the agent loop ---

async def test_it_scores_a_correct_tool_using_run_as_completed():
    engine = ScriptedEngine([
        openai_call("search", {"pattern": "if method ==", "path": "server.py"}),
        openai_call("read_file", {"path": "server.py", "start_line": 1, "end_line": 200}),
        openai_call("read_file", {"path": "server.py", "start_line": 201, "end_line": 400}),
        openai_call("read_file", {"path": "server.py", "start_line": 401, "end_line": 600}),
        openai_text(table(ROUTES_47)),
    ])
    summary, progress = await run(engine)
    assert (summary["score"], summary["rows"], summary["exact"]) == (47, 47, True)
    assert (summary["precision"], summary["f1"], summary["answer_rows"]) == (1.0, 1.0, 47)
    assert (summary["outcome"], summary["stop_reason"], summary["steps"]) == ("completed", "answered", 5)
    assert summary["task_s"] > 0 and summary["output_tokens"] == 150 and summary["max_reads"] == 4
    assert progress.total == 5  # at most 40 steps; the task took 5, so its progress ends whole
    assert [v["tool"] for _, v in progress.samples] == ["search", "read_file", "read_file", "read_file", None]
    assert progress.samples[1][1]["arguments"] == {"path": "server.py", "start_line": 1, "end_line": 200}
    for body in engine.requests:
        roles = [m["role"] for m in body["messages"]]
        assert roles.count("system") == 1 and roles[0] == "system"
        system = body["messages"][0]["content"]
        assert "search and read_file" in system and "holds these files: server.py." in system
        assert body["tools"] == TOOL_SCHEMAS and body["stream"] is False
    second = engine.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "search"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    assert 'server.py:241:         if method == "GET" and path == "/health":' in second[-1]["content"]


async def test_it_notes_at_read_12_withdraws_tools_at_read_20_and_calls_the_forced_answer_rescued():
    engine = ScriptedEngine([*looping_reads(21), openai_text(table(ROUTES_47))])
    summary, progress = await run(engine)
    requests = engine.requests
    assert len(requests) == 22
    assert ["tools" in body for body in requests] == [True] * 20 + [False] * 2
    assert all("Note:" not in last_content(body) for body in requests[1:12])
    assert "you have read server.py 12 times" in last_content(requests[12])
    assert "you have read server.py 19 times" in last_content(requests[19])
    refused = last_content(requests[20])
    assert refused.startswith("Not executed: this would be read number 20 of server.py")
    assert "\t" not in refused  # no file lines: the 20th read did not run
    assert last_content(requests[21]) == UNAVAILABLE_NOTE
    assert all([m["role"] for m in body["messages"]].count("system") == 1 for body in requests)
    assert (summary["outcome"], summary["steps"], summary["score"]) == ("rescued", 22, 47)
    assert summary["tools_withdrawn"] and summary["max_reads"] == 20
    assert [v["tools_offered"] for _, v in progress.samples] == [True] * 20 + [False] * 2
    assert [c["executed"] for _, v in progress.samples[18:21] for c in v["calls"]] == [True, False, False]


async def test_it_ends_as_a_loop_when_the_model_calls_tools_again_after_the_retry():
    engine = ScriptedEngine(looping_reads(22))
    summary, _ = await run(engine)
    assert len(engine.requests) == 22
    assert (summary["outcome"], summary["stop_reason"], summary["steps"]) == (
        "loop", "tool call without tools", 22,
    )
    assert (summary["score"], summary["answer"]) == (0, "")


async def test_it_stops_at_the_step_limit_as_a_loop_and_grades_the_last_text(tmp_path):
    engine = ScriptedEngine(
        [openai_call("search", {"pattern": f"route{i}"}) | {"content": table(ROUTES_47)} for i in range(30)]
    )
    summary, progress = await run(engine, fixture=two_file_fixture(tmp_path), max_steps=30)
    assert (summary["outcome"], summary["stop_reason"], summary["steps"]) == ("loop", "step limit", 30)
    assert summary["score"] == 47 and summary["max_reads"] == 0
    assert len(progress.samples) == 30


async def test_it_calls_a_completed_run_of_26_steps_a_loop(tmp_path):
    engine = ScriptedEngine([*[openai_call("search", {"pattern": "x"})] * 25, openai_text(table(ROUTES_47))])
    summary, _ = await run(engine, fixture=two_file_fixture(tmp_path))
    assert (summary["outcome"], summary["stop_reason"], summary["steps"], summary["score"]) == (
        "loop", "answered", 26, 47,
    )


async def test_it_reports_an_engine_error_as_the_outcome():
    failure = httpx.Response(500, text="Conversation roles must alternate")
    engine = ScriptedEngine([openai_call("search", {"pattern": "GET"}), failure])
    summary, progress = await run(engine)
    assert (summary["outcome"], summary["stop_reason"], summary["steps"]) == ("error", "engine error", 1)
    assert summary["error"].startswith("step 2: ") and "500" in summary["error"]
    assert len(progress.samples) == 1


async def test_it_reports_an_empty_reply_as_an_error():
    summary, _ = await run(ScriptedEngine([openai_text("")]))
    assert (summary["outcome"], summary["stop_reason"], summary["score"]) == ("error", "empty reply", 0)


async def test_it_speaks_ollamas_native_api_on_the_second_fixture():
    engine = ScriptedEngine([
        ollama_call("search", {"pattern": "if \\(method", "path": "server.js"}),
        ollama_call("read_file", {"path": "server.js", "start_line": 80, "end_line": 181}),
        {"role": "assistant", "content": table(ROUTES_12)},
    ], kind="ollama")
    summary, _ = await run(engine, fixture="routes_12", sampling={"temperature": 0.6, "top_k": 20})
    assert (summary["score"], summary["rows"], summary["outcome"]) == (12, 12, "completed")
    assert summary["steps"] == 3
    first, third = engine.requests[0], engine.requests[2]
    assert first["stream"] is False and "think" not in first and first["tools"] == TOOL_SCHEMAS
    assert first["options"] == {"temperature": 0.6, "num_predict": 2048, "top_k": 20, "seed": 0}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "server.js" in first["messages"][1]["content"]
    assistant, result = third["messages"][-2:]
    assert assistant["tool_calls"] == [{"function": {"name": "read_file", "arguments": {
        "path": "server.js", "start_line": 80, "end_line": 181}}}]
    assert result["role"] == "tool" and result["tool_name"] == "read_file"
    assert result["content"].startswith("server.js, lines 80-181 of 181:")


def test_it_hides_the_truth_dotfiles_and_caches_from_the_tools(tmp_path):
    for name in ("app.py", "truth.csv", ".env", "__pycache__/app.cpython-311.pyc", "lib/util.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("SECRET = 1\n")
    workspace = Workspace(tmp_path)
    assert workspace.files() == ["app.py", "lib/util.py"]
    hits = workspace.call("search", {"pattern": "SECRET"})
    assert hits == "app.py:1: SECRET = 1\nlib/util.py:1: SECRET = 1"
    assert workspace.call("read_file", {"path": ".env"}).startswith("error: no such file")


def test_it_refuses_a_broken_fixture_or_job_before_any_request(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match=r"has no truth\.csv"):
        load_fixture(tmp_path)
    (tmp_path / "b.py").write_text("y = 2\n")
    with pytest.raises(ValueError, match="exactly one source file"):
        load_fixture(tmp_path)
    with pytest.raises(ValueError, match="at least 1"):
        AgentTableJob("agent", "routes_47", max_steps=0)


async def test_it_counts_searches_without_a_path_in_a_one_file_workspace_as_reads():
    paths = ({}, {"path": "."}, {"path": ""})
    engine = ScriptedEngine(
        [openai_call("search", {"pattern": f"route{i}"} | paths[i % 3], f"call_{i}") for i in range(40)]
    )
    summary, progress = await run(engine)
    requests = engine.requests
    assert "you have read server.py 12 times" in last_content(requests[12])
    assert last_content(requests[20]).startswith("Not executed: this would be read number 20 of server.py")
    assert ["tools" in body for body in requests] == [True] * 20 + [False] * 2
    assert (summary["outcome"], summary["stop_reason"], summary["steps"]) == (
        "loop", "tool call without tools", 22,
    )
    assert summary["max_reads"] == 20 and summary["tools_withdrawn"]
    assert [c["reads"] for _, v in progress.samples[:3] for c in v["calls"]] == [1, 2, 3]


@pytest.mark.parametrize("kind", ["llama-server", "ollama"])
async def test_it_tells_the_model_its_arguments_were_not_json_the_same_way_on_both_apis(kind):
    broken = '{"path": "server.py", start_line: 1'
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": broken}}
    engine = ScriptedEngine([
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "assistant", "content": table(ROUTES_47)},
    ], kind=kind)
    summary, progress = await run(engine)
    assistant, result = engine.requests[1]["messages"][-2:]
    sent_back = assistant["tool_calls"][0]["function"]["arguments"]
    assert sent_back == ("{}" if kind == "llama-server" else {})
    assert result["role"] == "tool" and result["content"].startswith(
        "error: not executed: the arguments of this read_file call were not valid JSON: "
    )
    assert repr(broken) in result["content"] and '"path": "app.py"' in result["content"]
    assert progress.samples[0][1]["calls"][0]["arguments"] == broken
    assert (summary["outcome"], summary["max_reads"]) == ("completed", 0)


async def test_it_tells_the_model_when_its_arguments_are_json_but_not_an_object():
    call = {"function": {"name": "search", "arguments": ["GET"]}}
    engine = ScriptedEngine([
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "assistant", "content": table(ROUTES_47)},
    ], kind="ollama")
    await run(engine)
    assistant, result = engine.requests[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == {}
    assert "search call were valid JSON but not an object: '[\"GET\"]'" in result["content"]
