"""The engine client seam: one request in, client timestamps and the engine's own figures out.

Plain async Python with no Django import, so the measurement core is testable alone.
"""
from __future__ import annotations

import contextlib
import functools
import json
import ssl
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx
import orjson

from engines.clients import lost_socket, wire
from engines.clients.chunk import Chunk
from engines.clients.lines import MAX_LINE_BYTES, LineTooLong, bounded_lines
from engines.clients.reasoning import split_unopened
from engines.errors import (
    EngineCut,
    EngineError,
    EngineHTTPError,
    EngineMalformed,
    EngineTimeout,
    EngineUnreachable,
)

__all__ = [
    "REASONING_SOURCES",
    "Chunk",
    "EngineClient",
    "EngineError",
    "EngineFigures",
    "EngineHTTPError",
    "Generation",
    "GenerationRequest",
    "now",
]

# How long an idle pooled connection is reused. Below every engine's own keep-alive timeout
# (llama-server closes an idle connection after 5 s, httpx's default is also 5 s): at 5 s a
# request sent as the engine closes the connection fails with "Server disconnected".
KEEPALIVE_EXPIRY_S = 2.0


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once per process: each build reads the CA bundle, ~20 ms
    of CPU, which every client (one per run) paid before."""
    return httpx.create_ssl_context()


def now() -> float:
    """The client clock every timestamp is taken with (monotonic, seconds)."""
    return time.perf_counter()


@dataclass(frozen=True)
class GenerationRequest:
    """One chat request, with fixed sampling."""

    model: str
    messages: list[dict[str, Any]]
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = 0
    # Thinking (reasoning) for this request: True/False asks the engine to turn it on/off,
    # None leaves the engine's (or the launch flags') default; reasoning_effort likewise.
    thinking: bool | None = None
    reasoning_effort: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class EngineFigures:
    """The engine's own counts for one request; None where the engine does not report it."""

    output_tokens: int | None = None
    # "engine" (its usage, or its own count) or "tokenizer" (the reply had none: SparkDash counted
    # the streamed text with the engine's tokenizer, runs.core.request_figures.send)
    output_tokens_source: str | None = None
    prompt_tokens: int | None = None  # prompt tokens sent, cached ones included
    cached_tokens: int | None = None  # prompt tokens reused from the engine's cache
    prompt_s: float | None = None  # engine time spent on the new (uncached) prompt tokens
    decode_s: float | None = None  # engine time spent generating
    decode_tps: float | None = None  # the engine's own decode speed figure
    draft_tokens: int | None = None  # speculative tokens drafted
    accepted_tokens: int | None = None  # drafted tokens the target model accepted
    verifications: int | None = None  # target forward passes that verified a draft
    # per draft position i, the drafts whose i-th token was accepted (docs/metrics.md)
    accepted_by_position: list[int] | None = None
    ttft_s: float | None = None  # the engine's own arrival-to-first-token time
    finish_reason: str | None = None  # "stop", "length", ... as the engine says
    # Of output_tokens, those spent reasoning; where the count came from is one of REASONING_SOURCES.
    reasoning_tokens: int | None = None
    reasoning_tokens_source: str | None = None


# Where a reasoning token count came from: the engine's usage; the engine's tokenizer run over the
# streamed reasoning text; no reasoning was streamed (0); reasoning was streamed but nothing could
# count it (None).
REASONING_SOURCES = ("engine", "tokenizer", "stream", "unknown")


@dataclass
class Generation:
    """What one streamed request produced, as seen by the client and told by the engine."""

    sent_at: float
    chunks: list[Chunk]
    finished_at: float
    figures: EngineFigures

    @property
    def text(self) -> str:
        """The answer only; the reasoning is in reasoning_text."""
        return "".join(c.text for c in self.chunks if not c.reasoning)

    @property
    def reasoning_text(self) -> str:
        """The streamed reasoning ("" when none); the in-content style keeps its <think> tags."""
        return "".join(c.text for c in self.chunks if c.reasoning)

    @property
    def first_token_at(self) -> float | None:
        """When the first generated token of either sort (reasoning or answer) arrived."""
        return next((c.t for c in self.chunks if c.text), None)

    @property
    def first_answer_at(self) -> float | None:
        return next((c.t for c in self.chunks if c.text and not c.reasoning), None)

    @property
    def last_answer_at(self) -> float | None:
        return next((c.t for c in reversed(self.chunks) if c.text and not c.reasoning), None)

    @property
    def first_reasoning_at(self) -> float | None:
        return next((c.t for c in self.chunks if c.text and c.reasoning), None)

    @property
    def last_token_at(self) -> float | None:
        return next((c.t for c in reversed(self.chunks) if c.text), None)


class EngineClient(ABC):
    """An engine's HTTP API. Subclasses parse one wire format; all share httpx and errors."""

    api: ClassVar[str]  # the wire API it speaks ("openai", "ollama", "sglang"); never its engine kind
    # The engines.kinds name of the engine behind it; "" for a client made outside the registry.
    engine_kind: str = ""

    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        timeout: float = 300.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """:param transport: an httpx transport to use instead of the network (tests pass a MockTransport)."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S),
            verify=_tls_context(),
            transport=transport,
        )
        # The streamed answers' socket reader serves a plain http:// engine reached directly.
        self._on_wire = transport is None and self.http.base_url.scheme == "http" and not _proxied(base_url)

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    @abstractmethod
    def stream(self, request: GenerationRequest) -> AsyncIterator[Chunk | EngineFigures]:
        """Send the request; yield content chunks as they arrive, then the engine's figures.

        Raises EngineError for a dead engine, an HTTP error, a malformed or cut-off stream.
        """

    async def generate(self, request: GenerationRequest) -> Generation:
        """Run one request to the end and collect its chunks and the engine's figures."""
        chunks: list[Chunk] = []
        figures = EngineFigures()
        # Moved to the moment the request's headers start going out, when the transport says:
        # building the request and waiting for a pooled connection are not the engine's time.
        sent = [now()]
        token = _SENT_AT.set(sent)
        try:
            async for item in self.stream(request):
                if isinstance(item, Chunk):
                    chunks.append(item)
                else:
                    figures = item
        finally:
            _SENT_AT.reset(token)
        finished = now()
        chunks = split_unopened(chunks)
        gen = Generation(sent_at=sent[0], chunks=chunks, finished_at=finished, figures=figures)
        await self._count_reasoning(gen, request.model)
        return gen

    async def _count_reasoning(self, gen: Generation, model: str) -> None:
        """Fill the reasoning token count the engine did not give, and say where it came from.

        An engine count of 0 beside streamed reasoning is a placeholder (some servers always send
        it), so the tokenizer is asked then too. Called after finished_at is taken: the tokenizer
        request is not the generation's time.
        """
        f, reasoning = gen.figures, gen.reasoning_text
        if f.reasoning_tokens is not None and (f.reasoning_tokens > 0 or not reasoning):
            f.reasoning_tokens_source = f.reasoning_tokens_source or "engine"
            return
        if not reasoning:
            f.reasoning_tokens, f.reasoning_tokens_source = 0, "stream"
            return
        counted = await self.count_tokens(reasoning, model)
        f.reasoning_tokens = counted
        f.reasoning_tokens_source = "tokenizer" if counted is not None else "unknown"

    async def count_tokens(self, text: str, model: str) -> int | None:
        """Tokens in `text` by the engine's tokenizer; None where the engine has none to ask."""
        return None

    @abstractmethod
    async def version(self) -> str | None:
        """The engine's version string, or None when it does not say."""

    @abstractmethod
    async def model_info(self, model: str) -> dict[str, Any]:
        """What the engine says about a model: at least `id`, and `digest` where known."""

    async def models(self) -> list[str]:
        """The names of the models the engine serves (or has pulled), as its API lists them."""
        return []

    async def counters_text(self) -> str | None:
        """The engine's Prometheus /metrics text, or None when it does not serve one."""
        with self._engine_errors():
            response = await self.http.get("/metrics")
        if response.status_code != 200:
            return None
        return response.text

    def _stream_lines(self, path: str, body: dict[str, Any]) -> AsyncGenerator[tuple[float, str], None]:
        """POST `body` and yield the answer's lines as they arrive, each with the time the bytes
        that completed it were read (before any splitting or parsing); every failure becomes EngineError.
        Empty lines are dropped here: neither SSE as the clients read it (one `data:` line, one
        event) nor NDJSON gives them a meaning, and each would cost a trip up the generators.

        Read straight off the socket (engines.clients.wire) where httpx would add nothing: a plain
        http:// engine, no proxy, no test transport, no event hooks; through httpx otherwise.
        """
        hooks = self.http.event_hooks
        if self._on_wire and not hooks["request"] and not hooks["response"]:
            request, timeout = self.http.build_request("POST", path, json=body), self.http.timeout
            return wire.stream_lines(request, timeout.connect, timeout.read, _stamp_sent)
        return self._httpx_lines(path, body)

    async def _httpx_lines(self, path: str, body: dict[str, Any]) -> AsyncGenerator[tuple[float, str], None]:
        with self._engine_errors():
            answer = self.http.stream("POST", path, json=body, extensions={"trace": _note_sent})
            async with answer as response:
                if response.status_code >= 400:
                    raise await _http_error(response)
                pieces = Arrivals(response.aiter_bytes())
                async for line in _utf8_lines(pieces):
                    if line:
                        yield pieces.t, line

    async def _get_object(self, path: str) -> dict[str, Any]:
        return await self._request_object("GET", path)

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body (e.g. to Ollama's /api/create); the answer must be a JSON object."""
        return await self._post_object(path, body)

    async def _post_object(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._request_object("POST", path, body)

    async def _request_object(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One plain request whose answer must be a JSON object."""
        with self._engine_errors():
            response = await self.http.request(method, path, json=body)
            if response.status_code >= 400:
                raise await _http_error(response)
        return load_json_object(_decode(response.content), f"answer from {self.base_url}{path}")

    @contextlib.contextmanager
    def _engine_errors(self) -> Iterator[None]:
        """httpx's failures, a socket uvloop lost as it opened among them, raised as EngineError."""
        try:
            with lost_socket.as_connect_error():
                yield
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc) from exc

    def _transport_error(self, exc: Exception) -> EngineError:
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.InvalidURL):
            return EngineUnreachable(f"cannot reach {self.base_url}: {reason}")
        if isinstance(exc, httpx.ReadTimeout):
            limit = self.http.timeout.read
            return EngineTimeout(
                f"{self.base_url} timed out: sent nothing for {limit:g} s (the per-request read timeout)"
            )
        if isinstance(exc, httpx.TimeoutException):
            limit = self.http.timeout.read
            return EngineTimeout(f"{self.base_url} timed out ({type(exc).__name__}, limit {limit:g}s)")
        # Connected, then lost (the engine closed it mid-answer): the answer was cut.
        return EngineCut(f"connection to {self.base_url} failed: {reason}")


# Where the current task's generate() wants the moment its request started going out.
_SENT_AT: ContextVar[list[float] | None] = ContextVar("sparkdash_sent_at", default=None)


async def _note_sent(event: str, info: dict[str, Any]) -> None:
    """httpx trace hook: stamp the moment the request's headers start to be written."""
    if event.endswith(".send_request_headers.started"):
        _stamp_sent()


def _stamp_sent() -> None:
    """Note now as the moment the current task's request started going out."""
    box = _SENT_AT.get()
    if box is not None:
        box[0] = now()


def load_json_object(text: str, what: str) -> dict[str, Any]:
    """Parse one JSON object from an engine, or raise EngineError naming `what` and the text.

    orjson parses a streamed chunk's line in a third of the standard library's time (README, "Where
    a chunk's microseconds go"); what it refuses and the standard library reads (NaN, integers past
    64 bits) is read by the latter, so the same text parses the same either way.
    """
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        data = _stdlib_json(text)
    if not isinstance(data, dict):
        raise EngineMalformed(f"malformed {what}: {text[:100]}")
    return data


def _stdlib_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def merge_extra(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The request body with `extra` laid over it; nested dicts (options, stream_options) merge a level."""
    merged = dict(body)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def stopped_mid_answer(n_chunks: int) -> EngineError:
    return EngineCut(f"engine stopped mid-answer after {n_chunks} chunks")


def as_int(value: Any) -> int | None:
    """An engine count as int; None when missing or not a number (bool is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def as_dict(value: Any) -> dict[str, Any]:
    """An engine's JSON object as a dict; {} when missing or not an object."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """An engine's JSON array as a list; [] when missing or not an array."""
    return value if isinstance(value, list) else []


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


async def _http_error(response: httpx.Response) -> EngineHTTPError:
    body = await wire.error_head(response.aiter_bytes())
    return wire.http_error(str(response.request.url), response.status_code, body)


def _proxied(url: str) -> bool:
    """Whether httpx would reach `url` through a proxy from the environment (HTTP_PROXY, ALL_PROXY,
    NO_PROXY)."""
    proxies = urllib.request.getproxies()
    host = httpx.URL(url).host
    return bool(proxies.get("http") or proxies.get("all")) and not urllib.request.proxy_bypass(host)


class Arrivals:
    """A byte stream that notes when its latest piece was read, on the client clock.

    The line splitter yields a line while it holds the piece that completed it, so `t` read then
    is that piece's arrival: the chunk's time, whatever splitting and parsing cost afterwards.
    """

    def __init__(self, pieces: AsyncIterable[bytes]) -> None:
        self.pieces = pieces
        self.t = now()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self.pieces:
            self.t = now()
            yield piece


async def _utf8_lines(pieces: AsyncIterable[bytes], max_line: int = MAX_LINE_BYTES) -> AsyncIterator[str]:
    """Split a byte stream on newlines; each line goes out as soon as its newline arrives.

    Splitting bytes, not text, is safe: no multi-byte UTF-8 sequence contains b"\\n". A line
    longer than `max_line` bytes ends the stream with EngineMalformed (memory stays bounded).
    """
    try:
        async for line in bounded_lines(pieces, max_line):
            yield _decode(line)
    except LineTooLong as exc:
        raise wire.too_long(exc) from None


_decode = wire.decode
