"""A cap on every HTTP request body, before Django reads it (Django's ASGI handler would spool any
size to disk first): a body over SPARKDASH_MAX_REQUEST_BYTES gets 413 naming the limit, JSON under
/api/, plain text elsewhere. A declared Content-Length over the cap is refused unread; a body sent
without one (chunked) is counted and refused once it passes the cap.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Any: Django's and Channels' applications each type their scope and messages their own way.
App = Callable[[Any, Any, Any], Awaitable[None]]

__all__ = ["BodyLimit", "too_big_text"]

API_PREFIX = "/api/"


def too_big_text(size: int | None, limit: int) -> str:
    """What the 413 says: the body's size (or that it passed the limit) and the limit, in bytes."""
    if size is None:
        return f"request body too large: more than {limit:,} bytes; the limit is {limit:,} bytes"
    return f"request body too large: {size:,} bytes; the limit is {limit:,} bytes"


class BodyLimit:
    """ASGI middleware: HTTP request bodies of at most `limit` bytes reach `app`."""

    def __init__(self, app: App, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await _refuse(scope, send, too_big_text(declared, self.limit))
            return
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > self.limit:
                await _refuse(scope, send, too_big_text(None, self.limit))
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        await self.app(scope, _replay(messages, receive), send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """The messages already read, then the connection's own (its disconnect)."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _refuse(scope: Scope, send: Send, text: str) -> None:
    if scope.get("path", "").startswith(API_PREFIX):
        body, content_type = json.dumps({"error": text}).encode(), b"application/json"
    else:
        body, content_type = (text + "\n").encode(), b"text/plain; charset=utf-8"
    length = str(len(body)).encode()
    headers = [(b"content-type", content_type), (b"content-length", length), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
