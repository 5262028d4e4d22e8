"""The agent table task: an agent reads one server file through tools and writes its route table.

Each step is one model request. The run ends when the model answers with text and no tool call,
when a tool call comes back after the tools were withdrawn and the one retry is spent, when
`max_steps` requests were sent, or on an engine error. Outcome (docs/metrics.md, "run outcome"):
"error" for an engine error or an empty reply; else "loop" when the run stopped without an
answer; else "rescued" when the answer came after the watchdog's read note or withdrawal; else
"loop" at 26 or more steps; else "completed". The last text the model wrote is graded either way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.clients.base import EngineClient, EngineError, GenerationRequest, now
from measure.words import gettext_noop
from runs.core.jobs.agent_table.chat import (
    ChatReply,
    ToolCall,
    arguments_error,
    assistant_message,
    chat,
    merge_system,
    tool_message,
)
from runs.core.jobs.agent_table.fixture import Fixture, load_fixture
from runs.core.jobs.agent_table.grader import grade
from runs.core.jobs.agent_table.tools import TOOL_SCHEMAS, Workspace
from runs.core.jobs.agent_table.watchdog import UNAVAILABLE_NOTE, Decision, ReadWatchdog
from runs.core.jobs.progress import RunProgress

__all__ = ["LOOP_STEPS", "AgentTableJob", "run_agent_table"]

LOOP_STEPS = 26
# The stored outcomes and stop reasons stay English identifiers (exports, alerts); marked at import
# so the pages, and the JavaScript catalogue (engines/catalogue.py), say them in the reader's language.
COMPLETED, RESCUED, LOOP, ERROR = (
    gettext_noop("completed"), gettext_noop("rescued"), gettext_noop("loop"), gettext_noop("error"))
ANSWERED, EMPTY_REPLY, STEP_LIMIT = (
    gettext_noop("answered"), gettext_noop("empty reply"), gettext_noop("step limit"))
TOOLS_GONE, ENGINE_ERROR = gettext_noop("tool call without tools"), gettext_noop("engine error")
AGENT_PROMPT = (
    "You are a coding agent working in a read-only copy of a project. You see files only through "
    "the tools search and read_file; their line numbers count from 1. When you have what you need, "
    "stop calling tools and reply with your final answer as plain text."
)
WORKSPACE_PROMPT = "The workspace holds these files: {files}."
TASK_PROMPT = (
    "List every HTTP API route that {source} handles. Each route is an if-statement on the request "
    "method and path. Answer with a table with the columns method, path and line, where line is "
    "the number of the line holding that route's if-statement; one row per route."
)


@dataclass(frozen=True)
class AgentTableJob:
    """One agent run: the model, the fixture (a shipped name such as "routes_47", or a folder),
    the step limit, the token limit of each reply, and fixed sampling (temperature, top_p, top_k, seed)."""

    model: str
    fixture_dir: str | Path
    max_steps: int = 40
    # The seed's full answer was about 1,050 tokens; 1,024 would cut the table short.
    answer_tokens: int = 2048
    sampling: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.answer_tokens < 1:
            raise ValueError("max_steps and answer_tokens must be at least 1")

    def request(self, messages: list[dict[str, Any]], tools: bool) -> GenerationRequest:
        s = self.sampling
        return GenerationRequest(
            model=self.model,
            messages=merge_system(messages),
            max_tokens=self.answer_tokens,
            temperature=s.get("temperature", 0.0),
            top_p=s.get("top_p"),
            top_k=s.get("top_k"),
            seed=s.get("seed", 0),
            thinking=s.get("thinking"),
            reasoning_effort=s.get("reasoning_effort"),
            extra={"tools": TOOL_SCHEMAS} if tools else {},
        )


@dataclass
class _Run:
    """What one run has done so far."""

    client: EngineClient
    job: AgentTableJob
    fixture: Fixture
    workspace: Workspace
    messages: list[dict[str, Any]]
    watchdog: ReadWatchdog = field(default_factory=ReadWatchdog)
    started: float = field(default_factory=now)
    steps: int = 0
    stop_reason: str | None = None
    error: str | None = None
    answer: str = ""
    # Where the watchdog stepped in: the file, the step of its read note and of its withdrawal.
    read_loop: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=lambda: {"output_tokens": 0, "prompt_tokens": 0})


async def run_agent_table(client: EngineClient, job: AgentTableJob, progress: RunProgress) -> dict[str, Any]:
    """Run the task once; each step is reported as a "step" sample; returns the summary.

    An engine error ends the run with outcome "error" (the summary says why) instead of raising.
    Raises ValueError for a broken fixture, before any request.
    """
    fixture = load_fixture(job.fixture_dir)
    workspace = Workspace(fixture.root)
    run = _Run(client, job, fixture, workspace, task_messages(fixture, workspace))
    await progress.on_start(job.max_steps)
    try:
        await _steps(run, progress)
    except EngineError as exc:
        run.stop_reason, run.error = ENGINE_ERROR, f"step {run.steps + 1}: {exc}"
    # The task ended before max_steps: its progress is whole, the steps it took (not half a bar).
    await progress.on_start(run.steps)
    return summarize(run, now() - run.started)


def task_messages(fixture: Fixture, workspace: Workspace) -> list[dict[str, Any]]:
    """The opening messages: two system messages (merged into one when sent) and the task."""
    return [
        {"role": "system", "content": AGENT_PROMPT},
        {"role": "system", "content": WORKSPACE_PROMPT.format(files=", ".join(workspace.files()))},
        {"role": "user", "content": TASK_PROMPT.format(source=fixture.source)},
    ]


async def _steps(run: _Run, progress: RunProgress) -> None:
    while run.steps < run.job.max_steps:
        offered = run.watchdog.tools_offered
        reply = await chat(run.client, run.job.request(run.messages, offered))
        run.steps += 1
        _tally(run, reply)
        calls = _act(run, reply, offered)
        await progress.on_sample("step", _step_sample(run, reply, offered, calls))
        if run.stop_reason:
            return
    run.stop_reason = STEP_LIMIT


def _act(run: _Run, reply: ChatReply, offered: bool) -> list[dict[str, Any]]:
    """Take one reply: end the run, or run (or refuse) its tool calls and extend the conversation."""
    if not reply.tool_calls:
        run.stop_reason = ANSWERED if reply.text.strip() else EMPTY_REPLY
        return []
    if offered:
        results = [_execute(run, call) for call in reply.tool_calls]
    elif run.watchdog.on_reply_without_tools(has_tool_calls=True) == "retry":
        results = [_refuse(call, UNAVAILABLE_NOTE) for call in reply.tool_calls]
    else:
        run.stop_reason = TOOLS_GONE
        return [_refuse(call, None)[1] for call in reply.tool_calls]
    run.messages.append(assistant_message(run.client, reply))
    for call, (content, _) in zip(reply.tool_calls, results, strict=True):
        run.messages.append(tool_message(run.client, call, content))
    return [record for _, record in results]


def _execute(run: _Run, call: ToolCall) -> tuple[str, dict[str, Any]]:
    """Run one call past the watchdog: its result (with any note) and its record for the sample."""
    file = run.workspace.file_read_by(call.name, call.arguments)
    decision = run.watchdog.on_call(file)
    _note_loop(run, file, decision)
    result = ""
    if decision.execute:
        result = arguments_error(call) or run.workspace.call(call.name, call.arguments)
    content = "\n\n".join(part for part in (result, decision.note) if part)
    record = _call_record(call, decision.execute, decision.note) | {"file": file, "reads": decision.reads}
    return content, record


def _note_loop(run: _Run, file: str | None, decision: Decision) -> None:
    """Keep the step at which the watchdog first noted the read loop, and the one it withdrew the tools at."""
    watchdog = run.watchdog
    if file is None or decision.reads not in (watchdog.note_at, watchdog.withdraw_at):
        return
    run.read_loop.setdefault("file", file)
    run.read_loop.setdefault("noted_at_step" if decision.execute else "withdrawn_at_step", run.steps)


def _refuse(call: ToolCall, note: str | None) -> tuple[str, dict[str, Any]]:
    return note or "", _call_record(call, False, note) | {"file": None, "reads": 0}


def _call_record(call: ToolCall, executed: bool, note: str | None) -> dict[str, Any]:
    arguments = call.arguments if call.arguments is not None else call.raw_arguments
    return {"tool": call.name, "arguments": arguments, "executed": executed, "note": note}


def _tally(run: _Run, reply: ChatReply) -> None:
    if reply.text.strip():
        run.answer = reply.text
    for key in run.tokens:
        run.tokens[key] += getattr(reply.figures, key) or 0


def _step_sample(run: _Run, reply: ChatReply, offered: bool, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """One step as a sample: time, tokens, the tool called and its arguments (the first, and all)."""
    figures = reply.figures
    return {
        "step": run.steps,
        "at_s": reply.finished_at - run.started,
        "step_s": reply.finished_at - reply.sent_at,
        "output_tokens": figures.output_tokens,
        "prompt_tokens": figures.prompt_tokens,
        "cached_tokens": figures.cached_tokens,
        "decode_tps_engine": figures.decode_tps,
        "finish_reason": figures.finish_reason,
        "tools_offered": offered,
        "tool": calls[0]["tool"] if calls else None,
        "arguments": calls[0]["arguments"] if calls else None,
        "calls": calls,
        "text_chars": len(reply.text),
    }


def outcome(stop_reason: str | None, steps: int, intervened: bool = False) -> str:
    """completed, rescued, loop or error, per docs/metrics.md "run outcome" (the module docstring).

    :param intervened: the watchdog noted a read loop or withdrew the tools during the run
    """
    if stop_reason in (ENGINE_ERROR, EMPTY_REPLY):
        return ERROR
    if stop_reason != ANSWERED:
        return LOOP
    if intervened:
        return RESCUED
    return LOOP if steps >= LOOP_STEPS else COMPLETED


def summarize(run: _Run, task_s: float) -> dict[str, Any]:
    """The run's summary: the table score against the fixture's truth, outcome, steps, time."""
    result = grade(run.answer, run.fixture.truth)
    return {
        "fixture": run.fixture.name,
        "score": result.score,
        "rows": result.rows,
        "precision": result.precision,
        "f1": result.f1,
        "exact": result.exact,
        "outcome": outcome(run.stop_reason, run.steps, run.watchdog.intervened),
        "stop_reason": run.stop_reason,
        "steps": run.steps,
        "task_s": task_s,
        "answer_rows": result.answered,
        "extra_rows": len(result.extra),
        "missing_rows": len(result.missing),
        "max_reads": run.watchdog.max_reads(),
        "tools_withdrawn": not run.watchdog.tools_offered,
        "read_loop": _read_loop(run),
        **run.tokens,
        "answer": run.answer,
        "error": run.error,
    }


def _read_loop(run: _Run) -> dict[str, Any] | None:
    """The read loop the watchdog caught (file, steps, its thresholds); None when it never stepped in."""
    if not run.read_loop:
        return None
    return {"note_at": run.watchdog.note_at, "withdraw_at": run.watchdog.withdraw_at} | run.read_loop
