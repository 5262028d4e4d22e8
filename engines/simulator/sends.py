"""When the simulator actually wrote each chunk, server side, for benchmarks of the harness.

Stamps are time.perf_counter() (CLOCK_MONOTONIC on Linux), one clock for every process on the
machine, so a client in another process can subtract them from its own arrival stamps: the
difference is the harness's error, free of the simulator's own lateness. Bounded: only the
latest replies are kept, so a long-running demo server does not grow.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

__all__ = ["SendLog"]


class SendLog:
    """Per reply: its seed, when it arrived, and each chunk's due time, write time and tokens."""

    def __init__(self, keep: int = 2000) -> None:
        self.keep = keep
        self._replies: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def open(self, reply_id: str, seed: int, arrived: float) -> None:
        """Start a reply's record; `arrived` is the request's arrival on the perf_counter clock."""
        record = {"id": reply_id, "seed": seed, "arrived": arrived, "due": [], "sent": [], "tokens": []}
        self._replies[reply_id] = record
        while len(self._replies) > self.keep:
            self._replies.popitem(last=False)

    def wrote(self, reply_id: str, due: float, n_tokens: int) -> None:
        """Note that a chunk of n_tokens, due at `due`, is being written now.

        Stamped just before the write, so the server's own framing and send count against the
        harness in a benchmark, never for it.
        """
        sent = time.perf_counter()
        record = self._replies.get(reply_id)
        if record is not None:
            record["due"].append(due)
            record["sent"].append(sent)
            record["tokens"].append(n_tokens)

    def as_dict(self) -> dict[str, Any]:
        """The records, oldest first (GET /sim/sends)."""
        return {"clock": "perf_counter", "replies": list(self._replies.values())}
