"""The simulator's generation replies in Ollama's NDJSON and llama-server's OpenAI SSE formats.

Each format turns a Reply (what was asked, and its Schedule) into bytes: content chunks, the
closing chunk with the engine's own figures, a whole non-streamed body, an error and a broken
line for fault injection. Durations come from the schedule, so they are exact and repeatable.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from .agent import Turn
from .reasoning import reasoning_text, split
from .schedule import Emission, Schedule

__all__ = ["FORMATS", "OllamaChat", "OllamaGenerate", "OpenAIChat", "Reply", "llama_timings", "text"]

FINGERPRINT = "b0-sparkdash-simulator"
WORDS = (
    "the", "simulated", "engine", "streams", "plain", "words", "so", "a", "dashboard", "can", "count",
    "them", "while", "it", "measures", "time", "to", "first", "token", "decode", "speed", "and",
    "acceptance", "of", "drafted", "tokens",
)


# What a lossy drafter's wrong token reads as (a word plain decoding never gives).
WRONG_WORD = "lossy"


def text(start: int, n: int, wrong: frozenset[int] = frozenset()) -> str:
    """Tokens start..start+n-1 of every reply: one word each, space-separated; the `wrong` ones
    (a lossy drafter's, SimProfile.lossy_drafter) read WRONG_WORD."""
    return "".join(
        ("" if i == 0 else " ") + (WRONG_WORD if i in wrong else WORDS[i % len(WORDS)])
        for i in range(start, start + n)
    )


@dataclass(frozen=True)
class Reply:
    """One generation request as the simulator understood it, with its schedule."""

    model: str
    sched: Schedule
    prompt_n: int  # prompt tokens sent, cached ones included
    finish_reason: str  # "length" when the request capped the reply, else "stop"
    include_usage: bool = False
    id: str = "chatcmpl-sim"
    arrived: float = 0.0  # wall clock (epoch seconds) when the request arrived
    cache_n: int = 0  # prompt tokens reused from the prompt cache
    turn: Turn | None = None  # the scripted agent's reply to a request with tools (agent.py)
    reasoning_n: int = 0  # the reply's first tokens that are reasoning (reasoning.py)
    reasoning_style: str = "field"
    wrong: frozenset[int] = frozenset()  # reply token indices a lossy drafter got wrong

    def parts(self, start: int, n: int) -> tuple[str, str]:
        """Tokens start..start+n-1 as (reasoning text, answer text); "tags" puts both in the answer."""
        thought, answer = split(start, n, self.reasoning_n)
        reasoning = reasoning_text(thought.start, len(thought), self.reasoning_n, self.reasoning_style)
        wrong = frozenset(i - self.reasoning_n for i in self.wrong)  # as answer token indices
        words = text(answer.start, len(answer), wrong) if answer else ""
        if self.reasoning_style == "tags":
            return "", reasoning + words
        return reasoning, words

    def reasoning_sent(self) -> int:
        """Reasoning tokens among those scheduled (a cut-off reply may stop inside its reasoning)."""
        return min(self.reasoning_n, self.sched.n_tokens)

    def whole_parts(self) -> tuple[str, str]:
        """The (reasoning, content) of a whole reply: the script's, or the filler words."""
        if self.turn is None:
            return self.parts(0, self.sched.n_tokens)
        return "", self.turn.text


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


def _ms(seconds: float) -> float:
    # llama-server floors each duration at 1 us, so the per-second figures stay finite.
    return max(seconds * 1000, 0.001)


def llama_timings(sched: Schedule, prompt_n: int, cache_n: int = 0) -> dict[str, Any]:
    """llama-server's `timings`: predicted_ms runs from the first token to the last.

    As in llama-server, timings' prompt_n counts only the prompt tokens computed (not cache_n).
    """
    prompt_ms, predicted_ms = _ms(sched.first_s), _ms(sched.last_s - sched.first_s)
    prompt_n -= cache_n
    timings: dict[str, Any] = {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n,
        "prompt_per_second": 1e3 / prompt_ms * prompt_n,
        "predicted_n": sched.n_tokens,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / sched.n_tokens,
        "predicted_per_second": 1e3 / predicted_ms * sched.n_tokens,
    }
    if sched.draft_tokens > 0:
        timings |= {"draft_n": sched.draft_tokens, "draft_n_accepted": sched.accepted_tokens}
    return timings


class OllamaChat:
    """POST /api/chat: NDJSON lines; the last one has done:true and durations in nanoseconds."""

    media_type = "application/x-ndjson"
    key: ClassVar[str] = "message"

    def _piece(self, content: str) -> Any:
        return {"role": "assistant", "content": content}

    def _fields(self, content: str, thinking: str) -> dict[str, Any]:
        """The line's answer (and reasoning) fields: Ollama's chat puts `thinking` in the message."""
        piece = self._piece(content)
        if thinking:
            piece["thinking"] = thinking
        return {self.key: piece}

    def _line(self, body: dict[str, Any]) -> bytes:
        return json.dumps(body).encode() + b"\n"

    def content(self, reply: Reply, start: int, emission: Emission) -> bytes:
        thinking, content = reply.parts(start, emission.n_tokens)
        body = {"model": reply.model, "created_at": _iso(reply.arrived + emission.offset_s)}
        return self._line(body | self._fields(content, thinking) | {"done": False})

    def _final(self, reply: Reply, content: str) -> dict[str, Any]:
        timings = llama_timings(reply.sched, reply.prompt_n, reply.cache_n)
        return {
            "model": reply.model,
            "created_at": _iso(reply.arrived + reply.sched.last_s),
            self.key: self._piece(content),
            "done": True,
            # Ollama ends a reply with tool calls as "stop"; OpenAI's API says "tool_calls".
            "done_reason": "stop" if reply.finish_reason == "tool_calls" else reply.finish_reason,
            "total_duration": round(reply.sched.last_s * 1e9),
            "load_duration": 0,
            # As Ollama maps its llama-server child's timings.
            "prompt_eval_count": timings["cache_n"] + timings["prompt_n"],
            "prompt_eval_duration": round(timings["prompt_ms"] * 1e6),
            "eval_count": timings["predicted_n"],
            "eval_duration": round(timings["predicted_ms"] * 1e6),
        }

    def tail(self, reply: Reply) -> bytes:
        return self._line(self._final(reply, ""))

    def whole(self, reply: Reply) -> dict[str, Any]:
        thinking, content = reply.whole_parts()
        final = self._final(reply, content) | self._fields(content, thinking)
        if reply.turn is not None and reply.turn.tool is not None:
            call = {"function": {"name": reply.turn.tool, "arguments": reply.turn.arguments}}
            final[self.key]["tool_calls"] = [call]  # Ollama's arguments are an object
        return final

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": message}

    def malformed(self) -> bytes:
        return b'{"model": "sim", "message": {"role": "assistant", "content": "\n'


class OllamaGenerate(OllamaChat):
    """POST /api/generate: as /api/chat with "response" text, and `context` on the last line."""

    key = "response"

    def _piece(self, content: str) -> Any:
        return content

    def _fields(self, content: str, thinking: str) -> dict[str, Any]:
        return {self.key: content} | ({"thinking": thinking} if thinking else {})

    def _final(self, reply: Reply, content: str) -> dict[str, Any]:
        return super()._final(reply, content) | {"context": []}


class OpenAIChat:
    """POST /v1/chat/completions, llama-server flavoured: SSE chunks, `timings` on the last."""

    media_type = "text/event-stream"

    def _chunk(self, reply: Reply, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": reply.id,
            "object": "chat.completion.chunk",
            "created": int(reply.arrived),
            "model": reply.model,
            "system_fingerprint": FINGERPRINT,
            "choices": choices,
        }

    def _delta(self, reply: Reply, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return self._chunk(reply, [{"index": 0, "delta": delta, "finish_reason": finish}])

    def _sse(self, *bodies: dict[str, Any]) -> bytes:
        return b"".join(b"data: " + json.dumps(body).encode() + b"\n\n" for body in bodies)

    def content(self, reply: Reply, start: int, emission: Emission) -> bytes:
        reasoning, content = reply.parts(start, emission.n_tokens)
        # A step that ends the reasoning and starts the answer goes out as two deltas, as engines do.
        deltas = [{"reasoning_content": reasoning}] if reasoning else []
        deltas += [{"content": content}] if content or not reasoning else []
        chunks = [self._delta(reply, delta) for delta in deltas]
        if start > 0:
            return self._sse(*chunks)
        return self._sse(self._delta(reply, {"role": "assistant", "content": None}), *chunks)

    def tail(self, reply: Reply) -> bytes:
        chunks = [self._delta(reply, {}, reply.finish_reason)]
        if reply.include_usage:
            chunks.append(self._chunk(reply, []) | {"usage": _usage(reply)})
        chunks[-1]["timings"] = llama_timings(reply.sched, reply.prompt_n, reply.cache_n)
        return self._sse(*chunks) + b"data: [DONE]\n\n"

    def whole(self, reply: Reply) -> dict[str, Any]:
        reasoning, content = reply.whole_parts()
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        if reply.turn is not None and reply.turn.tool is not None:
            function = {"name": reply.turn.tool, "arguments": json.dumps(reply.turn.arguments)}
            message["tool_calls"] = [{"id": f"call-{reply.id}", "type": "function", "function": function}]
        choice = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
        return self._chunk(reply, [choice]) | {
            "object": "chat.completion",
            "usage": _usage(reply),
            "timings": llama_timings(reply.sched, reply.prompt_n, reply.cache_n),
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "type": "server_error"}}

    def malformed(self) -> bytes:
        return b'data: {"choices": [{"index": 0, "delta": {"content": \n\n'


def _usage(reply: Reply) -> dict[str, Any]:
    n = reply.sched.n_tokens
    return {
        "prompt_tokens": reply.prompt_n,
        "completion_tokens": n,
        "total_tokens": reply.prompt_n + n,
        "prompt_tokens_details": {"cached_tokens": reply.cache_n},
    } | _reasoning_usage(reply)


def _reasoning_usage(reply: Reply) -> dict[str, Any]:
    """vLLM's count of reasoning tokens; none in the tags style (no parser saw the reasoning)."""
    if reply.reasoning_style == "tags" or not reply.reasoning_sent():
        return {}
    return {"completion_tokens_details": {"reasoning_tokens": reply.reasoning_sent()}}


Format = OllamaChat | OpenAIChat
FORMATS: dict[str, Format] = {
    "/api/chat": OllamaChat(),
    "/api/generate": OllamaGenerate(),
    "/v1/chat/completions": OpenAIChat(),
}
