"""Serving the simulator with uvicorn: in a background thread for tests, or in the foreground.

The socket is bound before uvicorn starts, so port 0 gets a free port whose number is known
(and printed, or exposed as `.url`) before the first request.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

import uvicorn

from .app import build_app
from .enginelog import engine_log
from .schedule import SimProfile

__all__ = ["SimServer", "bind", "serve_forever", "serve_in_thread"]


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


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _server(profile: SimProfile, sock: socket.socket, log_file: str | None = None) -> uvicorn.Server:
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        build_app(profile, engine_log(log_file)),
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        # A "hang" request never ends by itself; don't let it hold shutdown for long.
        timeout_graceful_shutdown=1,
    )
    return uvicorn.Server(config)


class SimServer:
    """A simulator running in a daemon thread; a context manager that stops it on exit."""

    def __init__(
        self, profile: SimProfile, host: str = "127.0.0.1", port: int = 0, log_file: str | None = None
    ) -> None:
        self.profile = profile
        self._sock = bind(host, port)
        self.url = _url(self._sock)
        self._server = _server(profile, self._sock, log_file)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="sparkdash-simulator", daemon=True
        )

    def start(self, timeout: float = 10.0) -> SimServer:
        """Start serving and return once uvicorn accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the simulator did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (at most a few seconds)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> SimServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


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
    on_ready(_url(sock))
    _server(profile, sock, log_file).run(sockets=[sock])
