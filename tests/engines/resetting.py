"""A listener that resets every connection as soon as it accepts it, as a killed engine's does."""
from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def resetting_engine() -> Iterator[str]:
    """The base URL of a listener whose own thread accepts each connection and resets it at once
    (SO_LINGER 0), racing the client's event loop as a dying engine does."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)

    def reset_each() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed on leaving
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    threading.Thread(target=reset_each, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
