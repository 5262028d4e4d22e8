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
    """One keep-alive connection to the simulator; requests one at a time."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def generate(self, tokens: int, seed: int) -> BareGeneration:
        """Stream one reply of `tokens` tokens; stamp each read that holds a content chunk."""
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
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

    async def aclose(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            await self._streams[1].wait_closed()
