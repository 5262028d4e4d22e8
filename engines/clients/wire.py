"""A streamed answer read straight off an asyncio socket: the engine clients' per-chunk path.

httpx reads a streamed body through httpcore, h11 and anyio, several layers of Python for every
network piece: 4 to 5 µs of CPU per chunk more than the same read on a bare socket, on this
project's machine (README, "Where a chunk's microseconds go"). This reader does only what a
streamed answer needs: the request httpx built, written on a connection of its own, the status
line and headers, and the body framed by chunked transfer-encoding, Content-Length or the
connection's end. Each read is stamped (`WireBody.t`) as it returns, before any framing or
parsing.

Everything else (plain requests, https, proxies, a test's transport, event hooks) stays on httpx:
`EngineClient._stream_lines` chooses. Plain Python, no Django.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass

import httpx

from engines.clients.lines import MAX_LINE_BYTES, LineSplitter, LineTooLong
from engines.errors import (
    EngineCut,
    EngineError,
    EngineHTTPError,
    EngineMalformed,
    EngineTimeout,
    EngineUnreachable,
)

__all__ = [
    "ERROR_BODY_BYTES",
    "HEAD_LIMIT",
    "READ_SIZE",
    "Dechunker",
    "WireBody",
    "WireReply",
    "decode",
    "error_head",
    "http_error",
    "open_reply",
    "stream_lines",
    "too_long",
]

READ_SIZE = 65536  # the most one read takes; a streamed chunk is a few hundred bytes
HEAD_LIMIT = 65536  # the status line and headers together
_SIZE_LINE_LIMIT = 1024  # a chunk-size line with its extensions
_HEX_DIGITS = b"0123456789abcdefABCDEF"
ERROR_BODY_BYTES = 65536  # of an HTTP error's body, what is read for its message
_TAG = re.compile(r"<[^>]*>")


class _Cut(Exception):
    """The connection ended before the answer did."""


class _Idle(Exception):
    """Nothing was read for the read timeout."""


@dataclass
class WireReply:
    """An answer's status and headers (names in lower case), and its body to read."""

    status: int
    headers: dict[str, str]
    body: WireBody


async def open_reply(
    request: httpx.Request,
    connect_s: float | None,
    read_s: float | None,
    on_sent: Callable[[], None] | None = None,
) -> WireReply:
    """Connect, write `request` (an httpx-built request to an http:// URL), and read the answer's head.

    `on_sent()` is called just before the request's first byte is written. Raises EngineError:
    EngineUnreachable when the connection cannot be made, EngineTimeout, EngineCut, EngineMalformed.
    """
    url = request.url
    where = f"{url.scheme}://{url.netloc.decode('ascii')}"
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(url.host, url.port or 80, limit=HEAD_LIMIT), connect_s
        )
    except (OSError, TimeoutError) as exc:
        raise EngineUnreachable(f"cannot reach {where}: {_reason(exc, 'timed out connecting')}") from None
    body = WireBody(reader, writer, read_s, where)
    try:
        if on_sent is not None:
            on_sent()
        writer.write(_request_bytes(request))
        await writer.drain()
        status, headers = await body.read_head()
    except BaseException:
        body.close()
        raise
    return WireReply(status, headers, body)


async def stream_lines(
    request: httpx.Request,
    connect_s: float | None,
    read_s: float | None,
    on_sent: Callable[[], None] | None = None,
    max_line: int = MAX_LINE_BYTES,
) -> AsyncGenerator[tuple[float, str], None]:
    """Send `request`; each non-empty line of the answer with the time of the read that completed it.

    One generator from the socket to the line: the read, its stamp, de-chunking, splitting and
    decoding happen in this loop. An answer with status >= 400 raises EngineHTTPError (its text
    from the body's first ERROR_BODY_BYTES); every other failure is an EngineError too.
    """
    reply = await open_reply(request, connect_s, read_s, on_sent)
    body = reply.body
    try:
        if reply.status >= 400:
            raise http_error(str(request.url), reply.status, await error_head(body))
        splitter, framing, read = LineSplitter(max_line), body.framing, body.reader.read
        while framing is None or not framing.done:
            try:
                piece = await read(READ_SIZE)
            except (OSError, _Idle) as exc:
                raise body.error(exc) from None
            body.t = t = time.perf_counter()  # the read's time: before any framing or parsing
            if not piece:
                body.ended(framing)
                break
            for raw in _split(splitter, framing.feed(piece) if framing is not None else piece):
                if raw:
                    yield t, decode(raw)
        if (last := splitter.rest()) is not None:
            yield body.t, decode(last)
    finally:
        body.close()


def _split(splitter: LineSplitter, data: bytes) -> list[bytes]:
    try:
        return splitter.feed(data)
    except LineTooLong as exc:
        raise too_long(exc) from None


def too_long(exc: LineTooLong) -> EngineMalformed:
    """The clients' error for a streamed line past their bound."""
    return EngineMalformed(f"the engine's answer was refused: {exc} (the clients' line bound)")


def decode(raw: bytes) -> str:
    """An engine's bytes as text; EngineMalformed naming them when they are not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EngineMalformed(f"engine sent bytes that are not UTF-8 ({exc.reason}): {raw[:100]!r}") from None


async def error_head(pieces: AsyncIterable[bytes], limit: int = ERROR_BODY_BYTES) -> bytes:
    """At most `limit` bytes of the body: an error page is read for its message, never whole."""
    kept = bytearray()
    async for piece in pieces:
        kept += piece[: limit - len(kept)]
        if len(kept) >= limit:
            break
    return bytes(kept)


def http_error(url: str, status: int, body: bytes) -> EngineHTTPError:
    """The error of an HTTP answer with status >= 400, its message from the body's text (tags stripped)."""
    text = " ".join(_TAG.sub(" ", body.decode("utf-8", errors="replace")).split())
    return EngineHTTPError(f"{url} answered HTTP {status}: {text[:200] or '(empty body)'}", status)


def _request_bytes(request: httpx.Request) -> bytes:
    """The request as httpx would send it, but asking for no compression and a connection of its own."""
    skip = {b"accept-encoding", b"connection"}
    lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
    lines += [b"%s: %s" % (name, value) for name, value in request.headers.raw if name.lower() not in skip]
    lines += [b"Accept-Encoding: identity", b"Connection: close", b"", b""]
    return b"\r\n".join(lines) + request.content


class WireBody:
    """The answer's body as an async iterable of payload bytes; `t` is when the latest read returned.

    A watchdog timer, not a timeout per read, enforces the read timeout: a read costs no more than
    the stamp it takes anyway.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, read_s: float | None, where: str
    ) -> None:
        self.reader, self.writer, self.where = reader, writer, where
        self.read_s = read_s or 0.0  # 0: no read timeout
        self.t = time.perf_counter()
        self.framing: Dechunker | _Counted | None = None
        self._timer: asyncio.TimerHandle | None = None
        if self.read_s:
            self._timer = asyncio.get_running_loop().call_later(self.read_s, self._watch)

    def _watch(self) -> None:
        idle = time.perf_counter() - self.t
        if idle >= self.read_s:
            self.reader.set_exception(_Idle())
        else:
            self._timer = asyncio.get_running_loop().call_later(self.read_s - idle, self._watch)

    def close(self) -> None:
        """Stop the watchdog and close the connection (the answer is not read further)."""
        if self._timer is not None:
            self._timer.cancel()
        self.writer.close()

    async def read_head(self) -> tuple[int, dict[str, str]]:
        """The final status and headers (1xx answers skipped); sets how the body is framed."""
        while True:
            try:
                head = await self.reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                raise EngineMalformed(f"{self.where} sent headers longer than {HEAD_LIMIT} bytes") from None
            except asyncio.IncompleteReadError:
                raise EngineCut(
                    f"connection to {self.where} failed: closed before the answer's headers"
                ) from None
            except (OSError, _Idle) as exc:
                raise self.error(exc) from None
            self.t = time.perf_counter()
            status, headers = parse_head(head, self.where)
            if not 100 <= status < 200:
                break
        self.framing = _framing(headers, self.where)
        return status, headers

    async def __aiter__(self) -> AsyncIterator[bytes]:
        framing, read = self.framing, self.reader.read
        while framing is None or not framing.done:
            try:
                piece = await read(READ_SIZE)
            except (OSError, _Idle) as exc:
                raise self.error(exc) from None
            self.t = time.perf_counter()  # the read's time: before any framing or parsing
            if not piece:
                self.ended(framing)
                return
            data = framing.feed(piece) if framing is not None else piece
            if data:
                yield data

    def ended(self, framing: Dechunker | _Counted | None) -> None:
        """The connection ended: the body's end when nothing else frames it, else a cut."""
        if framing is not None:
            raise self.error(_Cut("the connection closed mid-answer"))

    def error(self, exc: BaseException) -> EngineError:
        if isinstance(exc, _Idle):
            return EngineTimeout(
                f"{self.where} timed out: sent nothing for {self.read_s:g} s (the per-request read timeout)"
            )
        return EngineCut(f"connection to {self.where} failed: {_reason(exc, type(exc).__name__)}")


def parse_head(head: bytes, where: str) -> tuple[int, dict[str, str]]:
    """The status code and headers of an HTTP/1.x answer's head (names in lower case, repeats joined)."""
    status_line, *lines = head[:-4].split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or not code.isdigit() or rest[3:4] not in (b"", b" "):
        raise EngineMalformed(f"{where} did not answer in HTTP/1.x: {status_line[:100]!r}")
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise EngineMalformed(f"{where} sent a malformed header line: {line[:100]!r}")
        key, text = name.decode("latin-1").lower(), value.strip().decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return int(code), headers


def _framing(headers: dict[str, str], where: str) -> Dechunker | _Counted | None:
    """How the body ends: chunked, after Content-Length bytes, or (None) when the connection closes."""
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise EngineMalformed(f"{where} compressed its answer ({encoding}) though asked not to")
    codings = [c.strip().lower() for c in headers.get("transfer-encoding", "").split(",") if c.strip()]
    if codings:
        if codings[-1] != "chunked":
            raise EngineMalformed(f"{where} sent a transfer-encoding this client cannot read: {codings}")
        return Dechunker(where)
    length = headers.get("content-length")
    if length is None:
        return None
    if not length.isdigit():
        raise EngineMalformed(f"{where} sent a malformed Content-Length: {length[:40]!r}")
    return _Counted(int(length))


class _Counted:
    """A body of a known length: the bytes up to it."""

    def __init__(self, length: int) -> None:
        self.left = length
        self.done = length == 0

    def feed(self, piece: bytes) -> bytes:
        piece = piece[: self.left]
        self.left -= len(piece)
        self.done = self.left == 0
        return piece


class Dechunker:
    """Chunked transfer-encoding's payload, out of network pieces as they come.

    Keeps back only a size line or a chunk's closing CRLF cut between two pieces; `done` once the
    last (zero-size) chunk and its trailers have come. Raises EngineMalformed on bad framing.
    """

    def __init__(self, where: str = "the engine") -> None:
        self.where = where
        self.left = 0  # bytes of the current chunk still to come
        self.crlf = False  # a chunk's data ended: its CRLF comes next
        self.trailers = False  # the last chunk came: trailer lines until a blank one
        self.pending = b""
        self.done = False

    def feed(self, piece: bytes) -> bytes:
        """The payload bytes `piece` completes (b"" when none)."""
        buf = self.pending + piece if self.pending else piece
        self.pending, out, i, n = b"", [], 0, len(buf)
        while i < n and not self.done:
            if self.left:
                take = min(self.left, n - i)
                out.append(buf[i : i + take])
                i, self.left = i + take, self.left - take
                self.crlf = self.left == 0
            elif self.crlf:
                if n - i < 2:
                    self.pending = buf[i:]
                    break
                if buf[i : i + 2] != b"\r\n":
                    raise self._malformed("a chunk did not end where its size said")
                i, self.crlf = i + 2, False
            else:
                end = buf.find(b"\r\n", i)
                if end < 0:
                    if n - i > _SIZE_LINE_LIMIT:
                        raise self._malformed("a chunk-size line is too long")
                    self.pending = buf[i:]
                    break
                self._line(buf[i:end])
                i, stop = end + 2, end + 2 + self.left
                if self.left and buf[stop : stop + 2] == b"\r\n":  # the whole chunk is here: one slice
                    out.append(buf[i:stop])
                    i, self.left = stop + 2, 0
        return out[0] if len(out) == 1 else b"".join(out)

    def _line(self, line: bytes) -> None:
        if self.trailers:
            self.done = not line
            return
        size = line.split(b";", 1)[0].strip()
        if not size or len(size) > 16 or size.strip(_HEX_DIGITS):  # int() alone would take "+1", "1_0"
            raise self._malformed(f"bad chunk size {line[:40]!r}")
        self.left = int(size, 16)
        self.trailers = self.left == 0

    def _malformed(self, what: str) -> EngineMalformed:
        return EngineMalformed(f"{self.where} sent a malformed chunked answer: {what}")


def _reason(exc: BaseException, default: str) -> str:
    return str(exc) or default
