"""Reading an answer to its very end once its last message is in, so its connection is reused.

httpx closes a connection whose response was left unread, so stopping at `[DONE]` (or Ollama's
done line) made every request open a new TCP connection: a connect inside the measured TTFT,
and 16 of them at once in a concurrency burst. The server ends the response right after that
message, so this reads at most the chunked terminator; a server that does not is dropped after
a short wait, as before.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from engines.clients.base import EngineError

__all__ = ["DRAIN_S", "read_to_end"]

DRAIN_S = 0.5


async def read_to_end(lines: AsyncIterator[str], limit_s: float = DRAIN_S) -> None:
    """Consume what is left of an answer's lines (ignored), for at most limit_s seconds."""
    with contextlib.suppress(TimeoutError, EngineError):
        async with asyncio.timeout(limit_s):
            async for _ in lines:
                pass
