"""A bare client: one raw asyncio socket, one HTTP/1.1 request, a stamp per read; no parsing stack.

The floor any client on this box can reach, measured in the same run against the same
simulator: what it shows is the box (scheduler, loopback, the simulator's own send), so the
harness's excess over it is the harness's. It counts the simulator's content chunks by their
exact bytes and is good for nothing else.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

CONTENT = b'"delta": {"content": "'  # the simulator's json.dumps of a content delta
DONE = b"data: [DONE]"
END = b"0\r\n\r\n"  # the chunked body's terminator


@dataclass
class BareGeneration:
    """The request's write time and each content chunk's arrival (the read that brought it)."""

    sent_at: float
    arrivals: list[float]


class BareClient:
    """A new connection per request, as the harness (which closes its own at [DONE]); the connect
    comes before the send stamp in both."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    async def generate(self, tokens: int, seed: int) -> BareGeneration:
        """Stream one reply of `tokens` tokens; stamp each read that holds a content chunk."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            return await self._exchange(reader, writer, tokens, seed)
        finally:
            writer.close()

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tokens: int, seed: int
    ) -> BareGeneration:
        body = json.dumps({"model": "sim", "messages": [{"role": "user", "content": "go"}],
                           "max_tokens": tokens, "seed": seed, "stream": True}).encode()
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        sent_at = time.perf_counter()
        writer.write(head + body)
        arrivals: list[float] = []
        carry, done = b"", False
        while not (done and carry.endswith(END)):
            piece = await reader.read(65536)
            t = time.perf_counter()
            if not piece:
                raise RuntimeError("the simulator closed the connection mid-answer")
            # A marker split across two reads is counted once, at the read that completes it.
            window = carry + piece
            arrivals += [t] * window.count(CONTENT)
            done = done or DONE in window
            carry = window[-(len(CONTENT) - 1):]  # never a whole marker: none counted twice
        return BareGeneration(sent_at, arrivals)
