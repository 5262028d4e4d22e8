"""The simulator as a raw ASGI application: routing, request fields, paced streaming, faults.

Chunks leave at absolute times (request arrival + scheduled offset on the loop clock), so
sleep overshoot never accumulates and client-side figures match the schedule. Two shared models
sit on top of the schedule: a batch (concurrent requests stretch each other's decode steps) and,
when the profile sets prefill_tps, a prompt cache (new prompt tokens add to the TTFT).
"""
from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any

from .agent import Turn, next_turn, offers_tools
from .cache import CHARS_PER_TOKEN, PromptCache, n_tokens, tokenize
from .choice import multiple_choice_answer
from .counters import SpecCounters
from .enginelog import Log, acceptance_line, engine_log
from .meta import META
from .output_type import output_type
from .schedule import Emission, Schedule, SimProfile, plan
from .sends import SendLog
from .wire import FORMATS, Format, OpenAIChat, Reply, text

__all__ = ["ASGIApp", "build_app"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

TIMER_SLACK_S = 0.0012  # how early to wake before a deadline, to finish the wait precisely


class BadRequest(Exception):
    """The request body cannot be understood; answered with HTTP 400."""


class _Http:
    """The few ASGI HTTP moves the simulator needs."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self.receive, self.send = receive, send
        # When the request arrived: on the loop clock (for pacing) and the wall clock (stamps).
        self.t0, self.arrived = asyncio.get_running_loop().time(), time.time()
        self.arrived_pc = time.perf_counter()  # the clock of the send log, shared across processes

    async def json_body(self) -> dict[str, Any]:
        raw, more = b"", True
        while more:
            message = await self.receive()
            raw, more = raw + message.get("body", b""), message.get("more_body", False)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise BadRequest("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        return body

    async def start(self, status: int, media_type: str, length: int | None = None) -> None:
        headers = [(b"content-type", media_type.encode())]
        if length is not None:
            headers.append((b"content-length", str(length).encode()))
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def write(self, data: bytes, more: bool = True) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": more})

    async def respond(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        await self.start(status, "application/json", len(data))
        await self.write(data, more=False)

    async def respond_text(self, status: int, body: str) -> None:
        data = body.encode()
        await self.start(status, "text/plain; version=0.0.4", len(data))
        await self.write(data, more=False)

    async def wait_disconnect(self) -> None:
        while (await self.receive())["type"] != "http.disconnect":
            pass


class Batch:
    """The requests in flight on the box: with n of them, each decode step takes
    1 + cost * (n - 1) times as long, as when one weight read serves a whole batch."""

    def __init__(self, cost: float) -> None:
        self.cost, self.active = cost, 0

    def slowdown(self) -> float:
        return 1 + self.cost * max(self.active - 1, 0)

    def paced(self, sched: Schedule) -> Iterator[Emission]:
        """The schedule's emissions, each decode step stretched by the batch of that moment.

        Lazy on purpose: a step is stretched when it is asked for, just after the one before
        it left. With one request in flight nothing is stretched, so the schedule holds exactly.
        """
        stretch, previous = 0.0, None
        for emission in sched.emissions:
            if previous is not None:
                stretch += (emission.offset_s - previous) * (self.slowdown() - 1)
            previous = emission.offset_s
            yield Emission(emission.offset_s + stretch, emission.n_tokens)


@dataclass(frozen=True)
class Box:
    """What all requests to one simulated server share."""

    profile: SimProfile
    batch: Batch
    cache: PromptCache
    # Ollama Modelfile aliases made through /api/create: alias -> draft_num_predict (lookahead).
    aliases: dict[str, int] = field(default_factory=dict)
    sends: SendLog = field(default_factory=SendLog)
    counters: SpecCounters = field(default_factory=SpecCounters)
    log: Log = field(default_factory=engine_log)
    # Generation requests so far, for the profile's fault_every.
    generations: Iterator[int] = field(default_factory=lambda: itertools.count(1))


@dataclass(frozen=True)
class Asked:
    """The request fields the simulator honours, whatever the wire format."""

    model: str | None
    limit: int | None
    seed: int
    stream: bool
    prompt: str
    include_usage: bool = False
    turn: Turn | None = None  # the scripted agent's reply, for a non-streamed request with tools
    thinking: bool = True  # False when the request turns thinking off


def build_app(profile: SimProfile, log: Log | None = None) -> ASGIApp:
    """An ASGI app that answers like Ollama and llama-server, paced by `profile`.

    :param log: where the engine's log lines go (default: stderr only).
    """
    ids = itertools.count(1)
    log = log or engine_log()
    box = Box(profile, Batch(profile.batch_cost), PromptCache(profile.cache_tokens, log), log=log)

    async def app(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        http = _Http(receive, send)
        try:
            await _route(http, box, scope["method"], scope["path"], next(ids))
        except BadRequest as exc:
            fmt = FORMATS.get(scope["path"])
            await http.respond(400, fmt.error(400, str(exc)) if fmt else {"error": str(exc)})

    return app


async def _route(http: _Http, box: Box, method: str, path: str, n: int) -> None:
    profile = box.profile
    if (method, path) == ("GET", "/sim/sends"):
        return await http.respond(200, box.sends.as_dict())
    if (method, path) == ("GET", "/metrics"):
        return await http.respond_text(200, box.counters.text())
    if (method, path) in META:
        return await http.respond(200, META[method, path](profile))
    if (method, path) == ("POST", "/tokenize"):
        body = await http.json_body()
        content = body.get("content", body.get("prompt", "")) if isinstance(body, dict) else ""
        return await http.respond(200, {"tokens": tokenize(str(content), body.get("with_pieces") is True)})
    if (method, path) == ("POST", "/api/create"):
        return await http.respond(200, _create_alias(box, await http.json_body()))
    fmt = FORMATS.get(path)
    if fmt is None:
        return await http.respond(404, {"error": f"no route {path}"})
    if method != "POST":
        return await http.respond(405, {"error": f"{path} takes POST"})
    asked = (_ask_openai if isinstance(fmt, OpenAIChat) else _ask_ollama)(await http.json_body())
    fault = profile.fault_of(next(box.generations))
    if fault == "http-500":
        return await http.respond(500, fmt.error(500, "simulated engine failure (fault http-500)"))
    if fault == "hang":
        return await http.wait_disconnect()
    reply = _reply(box, asked, f"chatcmpl-sim{n}", http.arrived)
    box.sends.open(reply.id, asked.seed, http.arrived_pc)
    run = _stream if asked.stream else _whole
    box.batch.active += 1
    try:
        await _until_disconnect(http, run(http, box, fmt, reply, fault))
    finally:
        box.batch.active -= 1
    box.counters.add(reply.sched)


def _create_alias(box: Box, body: Any) -> dict[str, str]:
    """Ollama's /api/create of an alias: only draft_num_predict matters to the simulator."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise BadRequest("/api/create needs a model name")
    parameters = body.get("parameters") or {}
    box.aliases[body["model"]] = int(parameters.get("draft_num_predict", box.profile.lookahead))
    return {"status": "success"}


def _reply(box: Box, asked: Asked, reply_id: str, arrived: float) -> Reply:
    profile = box.profile
    if asked.model in box.aliases:
        profile = replace(profile, lookahead=box.aliases[asked.model])
    # A negative limit means "no limit" to both Ollama and llama-server.
    limit = asked.limit if asked.limit is not None and asked.limit >= 0 else None
    reasoning_n = profile.reasoning_tokens if asked.thinking and asked.turn is None else 0
    length = profile.default_max_tokens + reasoning_n if limit is None else max(1, limit)
    # Without a limit the simulated model "stops by itself" at default_max_tokens.
    finish_reason, answer_type = "stop" if limit is None else "length", output_type(asked.prompt)
    turn = asked.turn
    if turn is not None:
        turn, length, finish_reason = _scripted(turn, limit)
        answer_type = "table" if turn.tool is None else "tool-call"
    prompt_n, cache_n, prefill_s = n_tokens(asked.prompt), 0, 0.0
    if profile.prefill_tps is not None:
        cache_n = box.cache.serve(asked.prompt, turn.content() if turn else text(0, length))
        prefill_s = (prompt_n - cache_n) / profile.prefill_tps
    sched = plan(profile, length, asked.seed, prefill_s, answer_type)
    return Reply(
        model=asked.model or profile.model,
        sched=sched,
        prompt_n=prompt_n,
        cache_n=cache_n,
        finish_reason=finish_reason,
        include_usage=asked.include_usage,
        id=reply_id,
        arrived=arrived,
        turn=turn,
        reasoning_n=min(reasoning_n, length),
        reasoning_style=profile.reasoning_style,
        wrong=sched.lossy_tokens(profile.lossy_drafter) if turn is None else frozenset(),
    )


def _scripted(turn: Turn, limit: int | None) -> tuple[Turn, int, str]:
    """The script's reply, its length in tokens and finish reason; cut to text at the limit, as an
    engine passes a tool call it could not finish on as plain text."""
    length = n_tokens(turn.content())
    if limit is not None and length > limit:
        return Turn(text=turn.content()[: max(1, limit) * CHARS_PER_TOKEN]), max(1, limit), "length"
    return turn, length, "stop" if turn.tool is None else "tool_calls"


async def _stream(http: _Http, box: Box, fmt: Format, reply: Reply, fault: str | None) -> None:
    profile = box.profile
    await http.start(200, fmt.media_type)
    faulty, sent = fault in ("cut", "malformed"), 0
    emitted: list[Emission] = []
    for emission in box.batch.paced(reply.sched):
        if faulty and sent >= profile.fault_after:
            break
        data = fmt.content(reply, sent, emission)  # rendered before the wait, to leave on time
        await _sleep_until(http.t0 + emission.offset_s, alone=box.batch.active <= 1)
        box.sends.wrote(reply.id, http.t0 + emission.offset_s, emission.n_tokens)
        await http.write(data)
        sent += emission.n_tokens
        emitted.append(emission)
    if fault == "malformed":
        await http.write(fmt.malformed())
    elif fault != "cut":
        _log_acceptance(box, reply)
        await http.write(fmt.tail(_as_paced(reply, emitted)))
    await http.write(b"", more=False)


async def _whole(http: _Http, box: Box, fmt: Format, reply: Reply, fault: str | None) -> None:
    emitted: list[Emission] = []
    for emission in box.batch.paced(reply.sched):
        await _sleep_until(http.t0 + emission.offset_s, alone=box.batch.active <= 1)
        emitted.append(emission)
    reply = _as_paced(reply, emitted)
    body = json.dumps(fmt.whole(reply)).encode()
    if fault == "malformed":
        body = fmt.malformed()
    elif fault == "cut":
        body = body[: len(body) // 2]
    else:
        _log_acceptance(box, reply)
    await http.start(200, "application/json")
    await http.write(body, more=False)


def _log_acceptance(box: Box, reply: Reply) -> None:
    """The reply's acceptance line, written before its last bytes leave (as llama-server prints
    timings when the slot is released), so a client that reads the log after a reply finds it."""
    line = acceptance_line(reply.id, reply.sched)
    if line:
        box.log(line)


def _as_paced(reply: Reply, emitted: list[Emission]) -> Reply:
    """The reply with the emissions as they left, so the engine's timings report them."""
    return replace(reply, sched=replace(reply.sched, emissions=emitted))


async def _sleep_until(deadline: float, alone: bool = True) -> None:
    """Wait until `deadline` (loop clock); the last sub-millisecond blocks only when `alone`,
    since a blocking sleep holds every other stream (16 streams would be late by 16 of them)."""
    loop = asyncio.get_running_loop()
    slack = TIMER_SLACK_S if alone else 0.0
    if deadline - loop.time() > slack:
        await asyncio.sleep(deadline - loop.time() - slack)
    delay = deadline - loop.time()
    if alone and delay > 0:
        # asyncio's epoll timeouts round up to whole milliseconds, i.e. ~1 % of a 150 ms TTFT;
        # the last sub-millisecond is slept blocking, which is precise (and frees the GIL).
        time.sleep(delay)  # noqa: ASYNC251


async def _until_disconnect(http: _Http, work: Coroutine[Any, Any, None]) -> None:
    """Run a reply, abandoning it when the client goes away (as an engine frees the slot)."""
    reply = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(http.wait_disconnect())
    done, pending = await asyncio.wait({reply, gone}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if reply in done:
        reply.result()


def _ask_ollama(body: dict[str, Any]) -> Asked:
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise BadRequest("options must be an object")
    if "messages" in body:
        prompt = _messages_text(body["messages"])
    else:
        prompt = f"{body.get('system') or ''}{body.get('prompt') or ''}"
    stream = body.get("stream") is not False  # Ollama streams unless told not to
    seed = _int(options, "seed") or 0
    turn = _turn(body) if "messages" in body and not stream else None
    thinking = body.get("think") is not False  # true or a level ("low", ...) keeps it on
    limit = _int(options, "num_predict")
    return Asked(body.get("model"), limit, seed, stream, prompt, turn=turn, thinking=thinking)


def _ask_openai(body: dict[str, Any]) -> Asked:
    keys = [k for k in ("max_tokens", "max_completion_tokens", "n_predict") if body.get(k) is not None]
    limit = _int(body, keys[0]) if keys else None
    stream_options = body.get("stream_options") or {}
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    prompt = _messages_text(body.get("messages", []))
    seed = _int(body, "seed") or 0
    stream = body.get("stream") is True
    turn = None if stream else _turn(body)
    kwargs = body.get("chat_template_kwargs")
    thinking = not (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False)
    return Asked(body.get("model"), limit, seed, stream, prompt, include_usage, turn, thinking)


def _turn(body: dict[str, Any]) -> Turn | None:
    """The scripted agent's reply to a chat body that offers tools, or whose conversation holds
    tool results (the turn after a watchdog withdrew them); a multiple-choice question's answer
    (choice.py); None for any other request."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if not offers_tools(body) and (choice := multiple_choice_answer(messages)) is not None:
        return Turn(text=choice)
    if not offers_tools(body) and not any(m.get("role") == "tool" for m in messages):
        return None
    return next_turn(messages, offers_tools(body))


def _int(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadRequest(f"{key} must be an integer")
    return value


def _messages_text(messages: Any) -> str:
    if not isinstance(messages, list):
        raise BadRequest("messages must be a list")
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # OpenAI content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(content if isinstance(content, str) else "")
    return "\n".join(parts)
