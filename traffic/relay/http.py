"""The few ASGI HTTP moves the relay makes toward its client."""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BadBody", "Http", "Receive", "Send"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]


class BadBody(Exception):
    """The client's body is not a JSON object."""


class Http:
    """One client request: read its JSON body, answer it whole or as a stream."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self.receive, self.send = receive, send
        self.started = False
        # The client has its answer's end (Ollama's done line, OpenAI's finishing chunk): a
        # client that leaves now has lost nothing, though the engine's last bytes are still due.
        self.answered = False

    async def json_body(self) -> dict[str, Any]:
        """The request's body as a JSON object (an empty body is {})."""
        raw, more = b"", True
        while more:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise BadBody("the client went away before its request was read")
            raw, more = raw + message.get("body", b""), message.get("more_body", False)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise BadBody("the request body is not JSON") from None
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
