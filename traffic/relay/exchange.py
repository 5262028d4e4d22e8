"""One generation request relayed: translated to the engine's API, its answer streamed back.

Each line from the engine is read into events and written on in the client's API as soon as it
is read (an answer in the client's own API passes through byte for byte, only read to measure
it). Failures before the client's stream began are answered with the engine's status in the
client's error shape; once it began, they end it with the client API's error event.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from .events import End, Event, OllamaReader, OpenAIReader, Piece
from .http import Http
from .meter import Meter
from .render import OllamaWriter, OpenAIWriter, Seen, ollama_error, openai_error
from .translate import Translated, merge_system, ollama_to_openai, openai_to_ollama
from .upstream import StreamError, Upstream, UpstreamError, Wire

__all__ = ["Exchange"]

MEDIA = {"ollama": "application/x-ndjson", "openai": "text/event-stream"}


class Writer(Protocol):
    """What both APIs' writers do (render.py)."""

    def piece(self, piece: Piece) -> bytes: ...
    def end(self, end: End, seen: Seen) -> bytes: ...
    def final(self, end: End, seen: Seen, piece: Piece | None = None) -> dict[str, Any]: ...
    def error(self, message: str) -> bytes: ...


@dataclass
class Exchange:
    """A generation request on `path` of the client's `front` ("ollama" or "openai")."""

    http: Http
    wire: Wire
    up: Upstream
    meter: Meter
    front: str
    path: str

    async def run(self, body: dict[str, Any]) -> None:
        """Relay the request; every outcome lands in the meter."""
        self.meter.request(body)
        plan = self._plan(body)
        if self.up.merge_system and isinstance(plan.body.get("messages"), list):
            plan.body["messages"] = merge_system(plan.body["messages"])
        self.passthrough = self.front == self.up.api
        self.reader = OllamaReader() if self.up.api == "ollama" else OpenAIReader()
        self.writer = self._writer(body)
        self.include_usage = _asked_usage(body)
        self.headers = _ignored_header(plan.ignored)
        streamed = body.get("stream") is not False if self.front == "ollama" else body.get("stream") is True
        try:
            await (self._stream(plan) if streamed else self._whole(plan))
        except UpstreamError as exc:
            await self._refuse(exc.status, exc.message)

    def _plan(self, body: dict[str, Any]) -> Translated:
        if self.front == "ollama" and self.up.api == "openai":
            return ollama_to_openai(self.path, body, self.up.engine_kind)
        if self.front == "openai" and self.up.api == "ollama":
            return openai_to_ollama(self.path, body)
        out = dict(body)
        if self.front == "openai" and out.get("stream") is True:
            # Ask for usage: the engine's counts are in it; stripped again if the client did not ask.
            asked = out.get("stream_options")
            out["stream_options"] = {**(asked if isinstance(asked, dict) else {}), "include_usage": True}
        return Translated(self.path, out)

    def _writer(self, body: dict[str, Any]) -> Writer:
        model = str(body.get("model") or "")
        if self.front == "ollama":
            return OllamaWriter(model, generate=self.path == "/api/generate")
        completion = self.path == "/v1/completions"
        return OpenAIWriter(model, completion=completion, include_usage=_asked_usage(body))

    async def _refuse(self, status: int, message: str) -> None:
        self.meter.failed(status, message)
        error = ollama_error(message) if self.front == "ollama" else openai_error(status, message)
        await self.http.respond(status, error)

    async def _stream(self, plan: Translated) -> None:
        async with self.wire.stream(self.up, "POST", plan.path, plan.body) as lines:
            await self.http.start(200, MEDIA[self.front], self.headers)
            try:
                ended = False
                async for line in lines:
                    ended = await self._line(line) or ended
                if not ended:
                    raise StreamError(f"the engine's answer broke off after {self.meter.pieces} pieces")
            except StreamError as exc:
                self.meter.failed(200, str(exc))
                await self.http.write(self.writer.error(str(exc)))
        await self.http.finish()

    async def _line(self, line: bytes) -> bool:
        """Relay one line of the engine's answer; True once the answer's end was read."""
        if self.up.api == "ollama":
            if not line.strip():
                return False
            events = self.reader.line(_json(line)) if isinstance(self.reader, OllamaReader) else []
            raw = line + b"\n"
        else:
            events, raw = self._sse(line)
        return await self._relay(events, raw)

    def _sse(self, line: bytes) -> tuple[list[Event], bytes]:
        assert isinstance(self.reader, OpenAIReader)
        if not line.strip() or line.startswith(b":"):
            return [], b""
        field, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if field == b"error":  # older llama-server builds report a failure as an `error:` line
            raise StreamError(f"the engine reported an error: {value[:300].decode(errors='replace')}")
        if field != b"data":
            return [], b""
        if value.strip() == b"[DONE]":
            return self.reader.done(), b"data: [DONE]\n\n"
        data = _json(value)
        events = self.reader.chunk(data)
        if self.include_usage or "usage" not in data:
            return events, b"data: " + value + b"\n\n"
        if not data.get("choices"):  # the usage chunk the relay asked for, not the client
            return events, b""
        without = {k: v for k, v in data.items() if k != "usage"}
        return events, b"data: " + json.dumps(without).encode() + b"\n\n"

    async def _relay(self, events: list[Event], raw: bytes) -> bool:
        ended = False
        if self.passthrough and raw:
            await self.http.write(raw)
        for event in events:
            if isinstance(event, Piece):
                if not self.passthrough:
                    await self.http.write(self.writer.piece(event))
                self.meter.sent(event)
            else:
                self.meter.ended(event)
                ended = True
                if not self.passthrough:
                    await self.http.write(self.writer.end(event, self.meter.seen()))
                self.http.answered = True
        return ended

    async def _whole(self, plan: Translated) -> None:
        raw = await self.wire.read(self.up, "POST", plan.path, plan.body)
        try:
            data = _json(raw)
            events = self.reader.whole(data)
            end = next((e for e in events if isinstance(e, End)), None)
            if end is None:
                raise StreamError("the engine's answer has no end (done or finish_reason)")
        except StreamError as exc:
            return await self._refuse(502, str(exc))
        piece = next((e for e in events if isinstance(e, Piece)), Piece())
        self.meter.ended(end)
        final = self.writer.final(end, self.meter.seen(), piece)
        whole = raw if self.passthrough else json.dumps(final).encode()
        await self.http.respond_bytes(200, "application/json", whole, self.headers)
        if piece:
            self.meter.sent(piece)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise StreamError(f"malformed engine chunk: {raw[:120].decode(errors='replace')}")
    return data


def _asked_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _ignored_header(ignored: dict[str, str]) -> list[tuple[bytes, bytes]]:
    if not ignored:
        return []
    text = "; ".join(f"{key}: {why}" for key, why in sorted(ignored.items()))
    return [(b"x-sparkdash-relay-ignored", text.encode("ascii", errors="replace"))]
