"""Serving the relay (or any ASGI app) with uvicorn on sockets bound beforehand.

The threaded server is the simulator's (engines.simulator.server.AppServer): sockets bound
before uvicorn starts, so port 0 gets a free port whose number is known before the first
request, and one server can listen on several (the machine's host on both the Ollama and the
OpenAI port, say). The relay runs its app's lifespan (its pooled engine connections) and gives
an endless engine stream 2 s to end at shutdown.
"""
from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from engines.simulator.server import AppServer, Lifespan, bind, url_of, uvicorn_server

__all__ = ["RelayServer", "bind", "serve_forever", "url_of"]

LIFESPAN: Lifespan = "auto"
GRACEFUL_S = 2


class RelayServer(AppServer):
    """An ASGI app served in a daemon thread; a context manager that starts it and stops it on exit.

    :param app: the relay (build_relay) or any ASGI app (tests serve scripted engines this way).
    :param sockets: where to listen; default one free port on 127.0.0.1.
    """

    def __init__(self, app: Any, sockets: Sequence[socket.socket] | None = None) -> None:
        super().__init__(app, sockets, name="the relay", lifespan=LIFESPAN, graceful_s=GRACEFUL_S)


def serve_forever(app: Any, sockets: Sequence[socket.socket]) -> None:
    """Serve `app` on the bound `sockets` in the foreground until interrupted (the relay command)."""
    uvicorn_server(app, sockets, LIFESPAN, GRACEFUL_S).run(sockets=list(sockets))
