"""Serving the relay (or any ASGI app) with uvicorn on sockets bound beforehand.

The sockets are bound before uvicorn starts (engines.simulator.server.bind), so port 0 gets a
free port whose number is known before the first request; one server can listen on several
(the machine's host on both the Ollama and the OpenAI port, say).
"""
from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import uvicorn

from engines.simulator.server import bind

__all__ = ["RelayServer", "bind", "serve_forever", "url_of"]


def url_of(sock: socket.socket) -> str:
    """The http:// URL a bound socket answers on."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _server(app: Any, sockets: Sequence[socket.socket]) -> uvicorn.Server:
    host, port = sockets[0].getsockname()[:2]
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="auto",
        # A stream that never ends by itself must not hold shutdown for long.
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


class RelayServer:
    """An ASGI app served in a daemon thread; a context manager that starts it and stops it on exit.

    :param app: the relay (build_relay) or any ASGI app (tests serve scripted engines this way).
    :param sockets: where to listen; default one free port on 127.0.0.1.
    """

    def __init__(self, app: Any, sockets: Sequence[socket.socket] | None = None) -> None:
        self.sockets = list(sockets) if sockets else [bind("127.0.0.1", 0)]
        self.url = url_of(self.sockets[0])
        self.urls = [url_of(s) for s in self.sockets]
        self._server = _server(app, self.sockets)
        self._thread = threading.Thread(target=self._run, name="sparkdash-relay", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=self.sockets))

    def start(self, timeout: float = 10.0) -> RelayServer:
        """Start serving; return once uvicorn accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the relay did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (a few seconds at most)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for sock in self.sockets:
            sock.close()

    def __enter__(self) -> RelayServer:
        return self.start() if not self._thread.is_alive() else self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def serve_forever(app: Any, sockets: Sequence[socket.socket]) -> None:
    """Serve `app` on the bound `sockets` in the foreground until interrupted (the relay command)."""
    _server(app, sockets).run(sockets=list(sockets))
