"""The engine behind the relay, and the HTTP moves the relay makes to it.

Every failure to reach the engine, or an HTTP error it answers, becomes an `UpstreamError` with
the status the client should get and a reason for the record; a failure once a stream has begun
becomes a `StreamError`, since the client's status line has already gone.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from engines.clients import lost_socket
from engines.clients.base import KEEPALIVE_EXPIRY_S
from engines.clients.lines import MIB, LineTooLong, bounded_lines, size_text

__all__ = ["Limits", "StreamError", "Upstream", "UpstreamError", "Wire", "error_message"]

CONNECT_TIMEOUT_S = 10.0
# A long prompt can keep an engine silent for minutes before its first token.
READ_TIMEOUT_S = 600.0
ERROR_BODY_BYTES = 65536  # of an engine's HTTP error, what is read for its message
# What a pooled connection that the engine had already closed fails with, before any answer:
# "Server disconnected without sending a response", a reset, a broken pipe.
STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclass(frozen=True)
class Upstream:
    """The engine a request goes to, asked for per request (the machine's engine can change).

    :param base_url: the engine's root URL, e.g. "http://127.0.0.1:8080".
    :param api: the wire API it speaks: "ollama" (Ollama's own) or "openai" (llama-server, vLLM, SGLang).
    :param engine_kind: its engines.kinds name ("ollama", "llama-server", "vllm", "sglang"), "" if unknown.
    :param merge_system: merge every system message into the first (some chat templates refuse two).
    :param capture_bodies: keep the request body and the answer's text in the record.
    :param body_cap_bytes: the most of each captured body kept (UTF-8 bytes).
    """

    base_url: str
    api: Literal["ollama", "openai"]
    api_key: str = ""
    engine_kind: str = ""
    merge_system: bool = False
    capture_bodies: bool = False
    body_cap_bytes: int = 65536


class UpstreamError(Exception):
    """The engine could not be asked, or answered with an HTTP error: the client gets `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class StreamError(Exception):
    """The engine's answer broke off or went wrong after the client's stream began."""


def error_message(raw: bytes) -> str:
    """The message of an engine's error body, whichever API's shape it has (or its text)."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300] or "(empty body)"
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]


@dataclass(frozen=True)
class Limits:
    """The relay's bounds on what it reads (`manage.py relay --max-body-mb --max-line-mb`).

    :param max_body: a client's request body, and an engine's whole (not streamed) answer.
    :param max_line: one line of an engine's streamed answer. Larger than an engine client's:
        Ollama's /api/generate ends with the whole context's token ids on one line.
    """

    max_body: int = 16 * MIB
    max_line: int = 4 * MIB


class Wire:
    """One pooled HTTP client to whichever engine each request names; made on first use."""

    def __init__(self, limits: Limits | None = None) -> None:
        self._http: httpx.AsyncClient | None = None
        self.limits = limits or Limits()
        self.retried = 0  # requests sent again after a pooled connection gave no answer

    def http(self) -> httpx.AsyncClient:
        """The shared client, created in the running loop."""
        if self._http is None:
            limits = httpx.Limits(max_connections=512, max_keepalive_connections=64,
                                  keepalive_expiry=KEEPALIVE_EXPIRY_S)
            self._http = httpx.AsyncClient(timeout=_timeout(), limits=limits)
        return self._http

    async def aclose(self) -> None:
        """Close the pooled connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    @asynccontextmanager
    async def stream(
        self, up: Upstream, method: str, path: str, body: dict[str, Any] | None = None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """The answer's lines as they arrive (without their newline); leaving the block closes the
        connection, which is how an engine learns that the client went away. A line longer than
        `limits.max_line` ends the stream with a StreamError that names the bound."""
        async with self._answer(up, method, path, body) as response:
            yield _lines(response, self.limits.max_line)

    async def read(self, up: Upstream, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
        """A whole answer's bytes (UpstreamError for HTTP errors, transport failures, and an answer
        longer than `limits.max_body`)."""
        async with self._answer(up, method, path, body) as response:
            whole = await _head(response, self.limits.max_body + 1)
        if len(whole) > self.limits.max_body:
            limit = size_text(self.limits.max_body)
            raise UpstreamError(502, f"the engine's answer to {path} exceeded {limit} (--max-body-mb)")
        return whole

    async def json(self, up: Upstream, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """A whole answer as JSON; a body that is not JSON is a 502."""
        raw = await self.read(up, method, path, body)
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise UpstreamError(502, f"the engine's answer to {path} is not JSON: {raw[:100]!r}") from None

    @asynccontextmanager
    async def _answer(
        self, up: Upstream, method: str, path: str, body: dict[str, Any] | None
    ) -> AsyncIterator[httpx.Response]:
        """The engine's response, its body not yet read; an HTTP error status is an UpstreamError."""
        request = self.http().build_request(method, _url(up, path), json=body, headers=_headers(up))
        async with self._sent(up, request) as response:
            if response.status_code >= 400:
                raw = await _read_error(response)
                message = f"the engine answered HTTP {response.status_code}: {error_message(raw)}"
                raise UpstreamError(response.status_code, message)
            yield response

    @asynccontextmanager
    async def _sent(self, up: Upstream, request: httpx.Request) -> AsyncIterator[httpx.Response]:
        """The engine's response to ``request``, its body unread and closed on leaving.

        A pooled connection the engine closed as the request went out (it idled out: llama-server
        closes after 5 s) gives no answer at all; the request is sent once more, on a connection
        of its own, before the client hears of it (nothing has reached the client yet).
        """
        stale: Exception | None = None
        try:
            with lost_socket.as_connect_error():
                response = await self.http().send(request, stream=True)
        except STALE_CONNECTION as exc:
            stale = exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise _unreachable(up, exc) from exc
        if stale is not None:
            self.retried += 1
            alone = httpx.Limits(max_keepalive_connections=0)
            async with httpx.AsyncClient(timeout=_timeout(), limits=alone) as once, \
                    _opened(up, once, request, stale) as response:
                yield response
            return
        try:
            yield response
        finally:
            await response.aclose()


@asynccontextmanager
async def _opened(up: Upstream, client: httpx.AsyncClient, request: httpx.Request,
                  first: Exception) -> AsyncIterator[httpx.Response]:
    try:
        with lost_socket.as_connect_error():
            response = await client.send(request, stream=True)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise _unreachable(up, exc, retried_after=first) from exc
    try:
        yield response
    finally:
        await response.aclose()


def _timeout() -> httpx.Timeout:
    return httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)


def _url(up: Upstream, path: str) -> str:
    return up.base_url.rstrip("/") + path


def _headers(up: Upstream) -> dict[str, str]:
    # Identity: a compressed stream would be held back by the decoder until a block fills.
    # Nothing of the client's request goes on (its relay token included): only what is built here.
    headers = {"Accept-Encoding": "identity"}
    if up.api_key:
        headers["Authorization"] = f"Bearer {up.api_key}"
    return headers


async def _head(response: httpx.Response, limit: int) -> bytes:
    """The body's first `limit` bytes at most (a transport failure is a 502)."""
    kept = bytearray()
    try:
        async for piece in response.aiter_bytes():
            kept += piece[: limit - len(kept)]
            if len(kept) >= limit:
                break
    except httpx.HTTPError as exc:
        raise UpstreamError(502, f"the engine's answer broke off: {exc or type(exc).__name__}") from exc
    return bytes(kept)


async def _read_error(response: httpx.Response) -> bytes:
    try:
        return await _head(response, ERROR_BODY_BYTES)
    except UpstreamError:
        return b""


async def _lines(response: httpx.Response, max_line: int) -> AsyncIterator[bytes]:
    """Each line leaves as soon as its newline arrives (engines.clients.lines: linear, bounded)."""
    try:
        async for line in bounded_lines(response.aiter_bytes(), max_line):
            yield line
    except httpx.HTTPError as exc:
        raise StreamError(f"the engine's answer broke off: {exc or type(exc).__name__}") from exc
    except LineTooLong as exc:
        raise StreamError(f"the engine's answer was cut: {exc} (the relay's --max-line-mb)") from None


def _unreachable(up: Upstream, exc: Exception, retried_after: Exception | None = None) -> UpstreamError:
    reason = str(exc) or type(exc).__name__
    if retried_after is not None:
        first = str(retried_after) or type(retried_after).__name__
        reason = f"{reason} (retried on a new connection after: {first})"
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        return UpstreamError(504, f"the engine at {up.base_url} timed out: {reason}")
    return UpstreamError(502, f"cannot reach the engine at {up.base_url}: {reason}")
