"""Measuring one relayed request into its TrafficRecord, as the client saw it and the engine told it.

Times are taken on the relay's clock when a piece of the answer has been handed to the client's
connection: TTFT to the first piece (text, reasoning or a tool call), generation from the first to
the last. Output tokens are the engine's count, else the pieces sent (one token each, roughly).
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from engines.clients.base import EngineFigures

from .classify import output_type
from .events import End, Piece
from .record import ToolCall, TrafficRecord, new_key
from .render import Seen
from .translate import text_of
from .upstream import Upstream

__all__ = ["PATH_ARGUMENTS", "Meter", "conversation_key"]

PATH_ARGUMENTS = ("path", "file", "file_path", "filename")
TRUNCATED = "…[truncated by the relay]"


def conversation_key(model: str, body: dict[str, Any]) -> str:
    """A short hash of the model, the first system message and the first user message: the later
    steps of one conversation repeat those, so they share it."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = next((text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    user = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
    if not messages:  # /api/generate and /v1/completions
        system, user = str(body.get("system") or ""), str(body.get("prompt") or "")
    digest = hashlib.sha256("\0".join((model, system, user)).encode()).hexdigest()
    return digest[:16]


def _cap(text: str, cap: int) -> tuple[str, bool]:
    raw = text.encode()
    if len(raw) <= cap:
        return text, False
    return raw[:cap].decode(errors="ignore"), True


class Meter:
    """Collects one request's figures; `record()` gives its TrafficRecord."""

    def __init__(self, front: str, path: str, client: str, up: Upstream) -> None:
        self.t0 = time.perf_counter()
        self.up = up
        self.rec = TrafficRecord(
            key=new_key(), front=front, path=path, client=client, model="", arrived=time.time(),
            upstream=up.api,
        )
        self.first: float | None = None
        self.last: float | None = None
        self.pieces = 0
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self.ended_at: float | None = None
        self.figures: EngineFigures | None = None  # the engine's, once its answer ended

    def request(self, body: dict[str, Any]) -> None:
        """Note what the client asked: model, conversation and turn, the body if captured."""
        rec = self.rec
        rec.model = str(body.get("model") or "")
        rec.conversation = conversation_key(rec.model, body)
        messages = body.get("messages")
        rec.turn = len(messages) if isinstance(messages, list) else 1
        if self.up.capture_bodies:
            text, cut = _cap(json.dumps(body, ensure_ascii=False), self.up.body_cap_bytes)
            rec.request_body = json.loads(text) if not cut else {"truncated": True, "text": text}

    def sent(self, piece: Piece) -> None:
        """A piece of the answer has just been handed to the client."""
        now = time.perf_counter()
        self.first = self.first if self.first is not None else now
        self.last, self.pieces = now, self.pieces + 1
        self.text.append(piece.content)
        for call in piece.tool_calls:
            path = next((str(call.arguments[k]) for k in PATH_ARGUMENTS if k in call.arguments), "")
            self.calls.append(ToolCall(call.name, path))

    def seen(self) -> Seen:
        """The relay's own figures so far, for an engine that gives none."""
        now = time.perf_counter()
        ttft = self.first - self.t0 if self.first is not None else None
        generation = self.last - self.first if self.first is not None and self.last is not None else None
        return Seen(e2e_s=now - self.t0, ttft_s=ttft, generation_s=generation, pieces=self.pieces)

    def ended(self, end: End) -> None:
        """The engine's end of the answer: finish reason and its own figures."""
        self.rec.finish_reason = end.finish_reason
        self.figured(end.figures)

    def figured(self, figures: EngineFigures) -> None:
        """The engine's own figures for the request (from its answer, or its counters after it)."""
        rec, self.figures = self.rec, figures
        rec.output_tokens = figures.output_tokens
        rec.prompt_tokens = figures.prompt_tokens
        # Only where the engine tells its cache (Ollama never does): unknown is not "all new".
        if figures.prompt_tokens is not None and figures.cached_tokens is not None:
            rec.new_prompt_tokens = figures.prompt_tokens - figures.cached_tokens
        rec.draft_tokens, rec.accepted_tokens = figures.draft_tokens, figures.accepted_tokens
        rec.decode_tps_engine = figures.decode_tps

    def failed(self, status: int, error: str) -> None:
        """The client got an error (status is what it was told; 200 once a stream had begun)."""
        self.rec.status, self.rec.error = status, error

    def done(self) -> None:
        """The last byte has gone to the client."""
        self.ended_at = time.perf_counter()

    def record(self) -> TrafficRecord:
        """The finished record."""
        rec, seen = self.rec, self.seen()
        rec.e2e_s = (self.ended_at or time.perf_counter()) - self.t0
        rec.ttft_s = seen.ttft_s
        rec.generation_s = seen.generation_s if self.pieces > 1 else None
        if rec.output_tokens is None and self.pieces:
            rec.output_tokens = self.pieces
        n = rec.output_tokens or 0
        if rec.generation_s and n > 1:
            rec.decode_tps_client = (n - 1) / rec.generation_s
        answer = "".join(self.text)
        rec.output_type = output_type(answer, len(self.calls))
        rec.tool_calls = list(self.calls)
        if self.up.capture_bodies:
            text, cut = _cap(answer, self.up.body_cap_bytes)
            rec.response_text = text + TRUNCATED if cut else text
        return rec
