"""The relay in its own process, in front of a given engine, for the relay benchmark.

`python -m tests.bench.relayproc UPSTREAM_URL` prints the relay's URL, then serves. Its sink is
a queue put, as the `relay` command's writer is (the database work is the writer thread's, and
the relay never waits on it), so the process's CPU is the relay's own.
"""
from __future__ import annotations

import queue
import sys

from traffic.relay import Upstream, bind, build_relay, serve_forever
from traffic.relay.server import url_of


def main(upstream_url: str) -> None:
    """Serve a relay to the OpenAI-compatible engine at `upstream_url` on a free loopback port."""
    records: queue.SimpleQueue = queue.SimpleQueue()
    upstream = Upstream(base_url=upstream_url, api="openai", engine_kind="llama-server")
    app = build_relay(lambda: upstream, records.put)
    sock = bind("127.0.0.1", 0)
    print(url_of(sock), flush=True)
    serve_forever(app, [sock])


if __name__ == "__main__":
    main(sys.argv[1])
