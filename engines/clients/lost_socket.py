"""A connection uvloop lost as it opened, raised as httpx's ConnectError.

When an engine resets a connection as it opens (an engine killed mid-run does), uvloop drops the
transport's socket before httpcore asks anyio about TLS, and anyio's look at the socket raises
AttributeError on None (uvloop issue 560 is the same loss seen from a server). The engine clients
(a run's worker loop) and the relay (uvicorn) both run on uvloop and both meet it: 48 of 1,000
requests to a listener that resets each connection raised it.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

__all__ = ["as_connect_error"]

# What anyio asks of a connection's socket (anyio.abc._sockets._SocketProvider.extra_attributes).
_SOCKET_ATTRIBUTES = frozenset({"family", "getsockname", "getpeername"})


@contextmanager
def as_connect_error() -> Iterator[None]:
    """Raise httpx.ConnectError for a socket lost as the connection opened; any other
    AttributeError is a bug, and passes through."""
    try:
        yield
    except AttributeError as exc:
        if exc.obj is not None or exc.name not in _SOCKET_ATTRIBUTES:
            raise
        raise httpx.ConnectError("the connection closed as it opened") from exc
