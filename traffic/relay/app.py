"""The relay as a raw ASGI application: both fronts by path, one record per generation request.

Ollama front: POST /api/chat, /api/generate, /api/show; GET /api/tags, /api/version; GET and HEAD
/ ("Ollama is running", which clients probe). OpenAI front: POST /v1/chat/completions,
/v1/completions; GET /v1/models. The engine is asked for per request (`upstream()`), so the
machine's engine can change under a running relay. A client that goes away mid-answer has the
engine request closed at once, and its record says so.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from dataclasses import replace
from typing import Any

from . import meta
from .counters import Counters, Ticket
from .exchange import Exchange
from .gate import REFUSED_MESSAGE, Admission, Gate, Refusals, open_gate, presented_token
from .http import BadBody, BodyTooLarge, Http, Receive, Send
from .meter import Meter
from .record import TrafficRecord
from .render import ollama_error, openai_error
from .translate import BadRequest
from .upstream import Limits, Upstream, UpstreamError, Wire

__all__ = ["CLIENT_GONE", "GENERATION", "RelayApp", "build_relay"]

log = logging.getLogger(__name__)

GENERATION = {"/api/chat": "ollama", "/api/generate": "ollama", "/v1/chat/completions": "openai",
              "/v1/completions": "openai"}
CLIENT_GONE = "client disconnected"
TAIL_S = 5.0  # how long an answered exchange may go on reading the engine once its client left
GONE_STATUS = 499  # the client left before any answer: nginx's name for it
OLLAMA_BANNER = b"Ollama is running"
NO_ENGINE = Upstream(base_url="", api="openai")  # stands in when upstream() fails; nothing is sent to it


class RelayApp:
    """The ASGI app; `aclose()` closes its pooled connections to engines."""

    def __init__(self, upstream: Callable[[], Upstream], sink: Callable[[TrafficRecord], None],
                 gate: Gate = open_gate, limits: Limits | None = None) -> None:  # fmt: skip
        self.upstream, self.sink, self.gate = upstream, sink, gate
        self.wire = Wire(limits)
        self.counters = Counters(self.wire)
        self.refusals = Refusals()
        self.settling: set[asyncio.Task[None]] = set()  # records waiting for the engine's counters

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        if scope["type"] != "http":
            return None
        http, path, method = Http(receive, send, _content_length(scope)), scope["path"], scope["method"]
        front = "openai" if path.startswith("/v1/") else "ollama"
        admission = self.gate(presented_token(scope))
        if admission is Admission.REFUSED and not (path == "/" and method in ("GET", "HEAD")):
            self.refusals.note(_client(scope))
            return await _refuse(http, front)
        up, failure = self._engine(path, admission)
        try:
            if path in GENERATION and method == "POST":
                return await self._generate(http, scope, front, up, failure)
            if failure:
                return await _error(http, front, 503, failure)
            return await self._meta(http, method, path, up)
        except (BadBody, BadRequest) as exc:
            await _error(http, front, 400, str(exc))
        except BodyTooLarge as exc:
            await _error(http, front, 413, str(exc))
        except UpstreamError as exc:
            await _error(http, front, exc.status, exc.message)

    def _engine(self, path: str, admission: Admission) -> tuple[Upstream, str]:
        """The engine for this request (with its stored API key only for a request that presented
        the relay token), and why there is none ("" when there is)."""
        try:
            up = self.upstream()
        except Exception as exc:  # the machine has no engine to relay to now: say so, in its shape
            log.exception("no upstream for %s", path)
            return NO_ENGINE, f"no engine to relay to: {exc}"[:300]
        if admission is not Admission.WITH_KEY and up.api_key:
            up = replace(up, api_key="")
        return up, ""

    async def aclose(self) -> None:
        """Hand on the records still waiting for counters, then close the connections to engines."""
        await asyncio.gather(*self.settling, return_exceptions=True)
        await self.wire.aclose()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # Made now, not on the first request: an httpx client loads its TLS trust store,
                # tens of milliseconds that would land on the first request's TTFT.
                self.wire.http()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                return await send({"type": "lifespan.shutdown.complete"})

    async def _meta(self, http: Http, method: str, path: str, up: Upstream) -> None:
        if path == "/" and method in ("GET", "HEAD"):
            return await http.respond_bytes(200, "text/plain; charset=utf-8", OLLAMA_BANNER)
        answers: dict[tuple[str, str], Callable[[], Awaitable[dict[str, Any]]]] = {
            ("GET", "/api/version"): lambda: meta.version(self.wire, up),
            ("HEAD", "/api/version"): lambda: meta.version(self.wire, up),
            ("GET", "/api/tags"): lambda: meta.tags(self.wire, up),
            ("GET", "/v1/models"): lambda: meta.models(self.wire, up),
        }
        if (method, path) == ("POST", "/api/show"):
            body = await http.json_body(self.wire.limits.max_body)
            return await http.respond(200, await meta.model_details(self.wire, up, body))
        if (method, path) in answers:
            return await http.respond(200, await answers[method, path]())
        front = "openai" if path.startswith("/v1/") else "ollama"
        status = 405 if path in GENERATION else 404
        await _error(http, front, status, f"the relay has no route {method} {path}")

    async def _generate(
        self, http: Http, scope: MutableMapping[str, Any], front: str, up: Upstream, failure: str
    ) -> None:
        meter = Meter(front, scope["path"], _client(scope), up)
        ticket = self.counters.start(up) if not failure else None
        try:
            body = await http.json_body(self.wire.limits.max_body)
            if failure:
                meter.request(body)
                meter.rec.upstream = ""
                meter.failed(503, failure)
                return await _error(http, front, 503, failure)
            exchange = Exchange(http, self.wire, up, meter, front, scope["path"])
            if await _until_disconnect(http, exchange.run(body)):
                meter.failed(meter.rec.status if http.started else GONE_STATUS, CLIENT_GONE)
        except (BadBody, BadRequest, BodyTooLarge) as exc:
            status = 413 if isinstance(exc, BodyTooLarge) else 400
            meter.failed(status, str(exc))
            await _error(http, front, status, str(exc))
        except Exception as exc:  # the client gets an answer, and the record says why
            log.exception("relaying %s failed", scope["path"])
            meter.failed(500 if not http.started else meter.rec.status, f"relay error: {exc!r}"[:300])
            if not http.started:
                await _error(http, front, 500, f"the relay failed: {exc!r}"[:300])
        finally:
            meter.done()
            if ticket is None:
                self._hand_on(meter.record())
            else:
                self._settle(ticket, meter)

    def _settle(self, ticket: Ticket, meter: Meter) -> None:
        """Hand the record on once the engine's counters told their side (after the client's last byte)."""

        async def settle() -> None:
            """The counters' figures into the record, then the record to the sink."""
            try:
                figures = await self.counters.finish(ticket, None if meter.rec.error else meter.figures)
                if figures is not None:
                    meter.figured(figures)
            finally:
                self._hand_on(meter.record())

        task = asyncio.ensure_future(settle())
        self.settling.add(task)
        task.add_done_callback(self.settling.discard)

    def _hand_on(self, record: TrafficRecord) -> None:
        try:
            self.sink(record)
        except Exception:  # a full or broken sink loses this record, never the client's answer
            log.exception("the traffic sink refused record %s", record.key)


def build_relay(upstream: Callable[[], Upstream], sink: Callable[[TrafficRecord], None],
                gate: Gate = open_gate, limits: Limits | None = None) -> RelayApp:  # fmt: skip
    """The relay: `upstream()` names the engine for each request, `sink` gets every request's
    record (also failed ones) and must not block (a queue put). `gate` decides per request from
    the token it presents (traffic.relay.gate; by default no token is checked and the engine's
    stored API key is never added); `limits` bound what it reads."""
    return RelayApp(upstream, sink, gate, limits)


async def _until_disconnect(http: Http, work: Coroutine[Any, Any, None]) -> bool:
    """Run the exchange; True when the client went away before its answer's end (the exchange is
    then cancelled, which closes the engine request). A client that leaves after its answer's end
    lost nothing: the exchange may read the engine's last bytes (its usage) for a moment more."""
    relay = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(http.wait_disconnect())
    done, _ = await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
    if relay not in done and http.answered:
        done, _ = await asyncio.wait({relay}, timeout=TAIL_S)
    for task in (relay, gone):
        task.cancel()
    await asyncio.gather(relay, gone, return_exceptions=True)
    if relay in done:
        relay.result()
        return False
    return not http.answered


def _client(scope: MutableMapping[str, Any]) -> str:
    peer = scope.get("client")
    address = f"{peer[0]}:{peer[1]}" if peer else ""
    agent = next((v.decode(errors="replace") for k, v in scope.get("headers", []) if k == b"user-agent"), "")
    return f"{address} {agent}".strip()[:200]


def _content_length(scope: MutableMapping[str, Any]) -> int:
    value = dict(scope.get("headers") or []).get(b"content-length", b"0")
    return int(value) if value.isdigit() else 0


async def _refuse(http: Http, front: str) -> None:
    """401 in the front's error shape: the client presented no live relay token."""
    body = ollama_error(REFUSED_MESSAGE) if front == "ollama" else openai_error(401, REFUSED_MESSAGE)
    challenge = [(b"www-authenticate", b'Bearer realm="SparkDash relay"')]
    await http.respond_bytes(401, "application/json", json.dumps(body).encode(), challenge)


async def _error(http: Http, front: str, status: int, message: str) -> None:
    if http.started:
        return
    await http.respond(status, ollama_error(message) if front == "ollama" else openai_error(status, message))
