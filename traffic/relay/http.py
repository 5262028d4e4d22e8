"""The few ASGI HTTP moves the relay makes toward its client."""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from engines.clients.lines import size_text

__all__ = ["BadBody", "BodyTooLarge", "Http", "Receive", "Send"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]


class BadBody(Exception):
    """The client's body is not a JSON object."""


class BodyTooLarge(Exception):
    """The client's body is longer than the relay takes (a 413; the message names the limit)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body exceeded {size_text(limit)} (the relay's --max-body-mb)")


class Http:
    """One client request: read its JSON body, answer it whole or as a stream."""

    def __init__(self, receive: Receive, send: Send, declared_length: int = 0) -> None:
        """:param declared_length: the request's Content-Length (0 when it gave none)."""
        self.receive, self.send, self.declared_length = receive, send, declared_length
        self.started = False
        # The client has its answer's end (Ollama's done line, OpenAI's finishing chunk): a
        # client that leaves now has lost nothing, though the engine's last bytes are still due.
        self.answered = False

    async def json_body(self, limit: int) -> dict[str, Any]:
        """The request's body as a JSON object (an empty body is {}); BodyTooLarge past `limit`
        bytes, told by its Content-Length before anything is read, or while reading."""
        if self.declared_length > limit:
            raise BodyTooLarge(limit)
        parts: list[bytes] = []
        size, more = 0, True
        while more:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise BadBody("the client went away before its request was read")
            part, more = message.get("body", b""), message.get("more_body", False)
            size += len(part)
            if size > limit:
                raise BodyTooLarge(limit)
            parts.append(part)
        try:
            body = json.loads(b"".join(parts) or b"{}")
        except ValueError:
            raise BadBody("the request body is not JSON") from None
        except RecursionError:
            raise BadBody("the request body is nested too deeply") from None
        if not isinstance(body, dict):
            raise BadBody("the request body must be a JSON object")
        return body

    async def start(self, status: int, media_type: str, headers: Headers | None = None) -> None:
        """Send the status line and headers."""
        self.started = True
        all_headers = [(b"content-type", media_type.encode()), *(headers or [])]
        await self.send({"type": "http.response.start", "status": status, "headers": all_headers})

    async def write(self, data: bytes) -> None:
        """Send part of the body now."""
        if data:
            await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self) -> None:
        """End the body."""
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def respond_bytes(
        self, status: int, media_type: str, body: bytes, headers: Headers | None = None
    ) -> None:
        """A whole answer."""
        length = [(b"content-length", str(len(body)).encode())]
        await self.start(status, media_type, length + (headers or []))
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    async def respond(self, status: int, body: dict[str, Any]) -> None:
        """A whole JSON answer."""
        await self.respond_bytes(status, "application/json", json.dumps(body).encode())

    async def wait_disconnect(self) -> None:
        """Return once the client has gone (or the answer is complete)."""
        while (await self.receive())["type"] != "http.disconnect":
            pass
