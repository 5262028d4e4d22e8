"""A bare websocket client on a run's socket, next to the browser pages of the live-latency benchmark.

It draws nothing, so its latencies are the server's part (worker, database, channels-redis,
daphne, loopback) on the same loaded box; the pages' figures add their own rendering to it.
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import websocket  # websocket-client


@contextlib.contextmanager
def listening(site: str, user: Any, run_id: int, clients: int = 1) -> Iterator[list[list[list[float]]]]:
    """`clients` connections, a thread each; yield their lists, which fill with [seq, sent, received]
    (epoch ms) while the block runs."""
    from django.test import Client

    session = Client()
    session.force_login(user)
    cookie = f"sessionid={session.cookies['sessionid'].value}"
    url = site.replace("http://", "ws://", 1) + f"/ws/runs/{run_id}/?after=-1"
    stop = threading.Event()
    sockets = [
        websocket.create_connection(url, timeout=1, origin=site, cookie=cookie) for _ in range(clients)
    ]
    rows: list[list[list[float]]] = [[] for _ in sockets]
    readers = [
        threading.Thread(target=_read, args=(ws, got, stop), daemon=True)
        for ws, got in zip(sockets, rows, strict=True)
    ]
    for reader in readers:
        reader.start()
    try:
        yield rows
    finally:
        stop.set()
        for reader, ws in zip(readers, sockets, strict=True):
            reader.join(10)
            ws.close()


def _read(ws: websocket.WebSocket, rows: list[list[float]], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            text = ws.recv()
        except websocket.WebSocketTimeoutException:
            continue
        except websocket.WebSocketException:
            return
        received = time.time() * 1000
        message = json.loads(text)
        for sample in message.get("samples", ()) if message.get("type") == "samples" else ():
            sent = (sample.get("values") or {}).get("bench_sent_ms")
            if sent:
                rows.append([sample["seq"], sent, received])
