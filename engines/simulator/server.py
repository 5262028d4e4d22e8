"""Serving the simulator with uvicorn: in a background thread for tests, or in the foreground.

The socket is bound before uvicorn starts, so port 0 gets a free port whose number is known
(and printed, or exposed as `.url`) before the first request.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Literal, Self

import uvicorn

from .app import build_app
from .enginelog import engine_log
from .schedule import SimProfile

Lifespan = Literal["auto", "on", "off"]  # uvicorn's: whether the app's startup and shutdown run

__all__ = ["AppServer", "SimServer", "bind", "serve_forever", "serve_in_thread", "url_of", "uvicorn_server"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; port 0 picks a free port.

    It listens at once, so a client that connects before uvicorn has started waits in the
    backlog instead of being refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY only then, and without it Nagle's algorithm
    # holds a reply's second small write for ~40 ms (a delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """The http:// URL a bound socket answers on."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_server(
    app: Any, sockets: Sequence[socket.socket], lifespan: Lifespan = "off", graceful_s: int = 1
) -> uvicorn.Server:
    """uvicorn for `app` on pre-bound `sockets` (the first names host and port in its log).

    :param graceful_s: how long a stream that never ends by itself (a "hang" fault, an engine's
        endless answer) may hold shutdown.
    """
    host, port = sockets[0].getsockname()[:2]
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan=lifespan,
        timeout_graceful_shutdown=graceful_s,
    )
    return uvicorn.Server(config)


class AppServer:
    """An ASGI app served by uvicorn in a daemon thread; a context manager that starts it if need be
    and stops it on exit. The simulator's SimServer and the relay's RelayServer are this.

    :param sockets: where to listen; default one free port on 127.0.0.1.
    """

    def __init__(
        self, app: Any, sockets: Sequence[socket.socket] | None = None, *, name: str = "sparkdash-server",
        lifespan: Lifespan = "off", graceful_s: int = 1,
    ) -> None:  # fmt: skip
        self.sockets = list(sockets) if sockets else [bind("127.0.0.1", 0)]
        self.url = url_of(self.sockets[0])
        self.urls = [url_of(s) for s in self.sockets]
        self._server = uvicorn_server(app, self.sockets, lifespan, graceful_s)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": self.sockets}, name=name, daemon=True
        )

    def start(self, timeout: float = 10.0) -> Self:
        """Start serving and return once uvicorn accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self._thread.name} did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (at most a few seconds)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for sock in self.sockets:
            sock.close()

    def __enter__(self) -> Self:
        return self if self._thread.is_alive() else self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class SimServer(AppServer):
    """A simulator running in a daemon thread."""

    def __init__(
        self, profile: SimProfile, host: str = "127.0.0.1", port: int = 0, log_file: str | None = None
    ) -> None:
        self.profile = profile
        app = build_app(profile, engine_log(log_file))
        super().__init__(app, [bind(host, port)], name="the simulator")


def serve_in_thread(
    profile: SimProfile, host: str = "127.0.0.1", port: int = 0, log_file: str | None = None
) -> SimServer:
    """Start a simulator in a background thread; use as `with serve_in_thread(p) as sim:`.

    :param log_file: also append the engine's log lines to this file (they always go to stderr).
    """
    return SimServer(profile, host, port, log_file).start()


def serve_forever(
    profile: SimProfile, host: str, port: int, on_ready: Callable[[str], None], log_file: str | None = None
) -> None:
    """Serve in the foreground until interrupted; on_ready gets the URL before serving starts."""
    sock = bind(host, port)
    on_ready(url_of(sock))
    uvicorn_server(build_app(profile, engine_log(log_file)), [sock]).run(sockets=[sock])
