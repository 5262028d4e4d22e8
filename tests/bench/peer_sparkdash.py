"""SparkDash's own measuring loop as a process of its own, for `make bench-peers` to time like a peer's.

`python -m tests.bench.peer_sparkdash URL STREAMS REQUESTS TOKENS OUT`: the concurrency job's core
(runs.core.jobs.concurrency.loop, no Django) at one level, REQUESTS requests of TOKENS tokens each,
STREAMS at a time, no warm-up; the summary goes to OUT as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engines.clients import client_for
from measure import event_loop
from runs.core.jobs.concurrency.loop import ConcurrencyJob, run_concurrency
from tests.runs.core.progress import CollectingProgress


async def measure(url: str, streams: int, requests: int, tokens: int) -> dict:
    job = ConcurrencyJob(
        "gemma", levels=(streams,), answer_tokens=tokens, reps=max(1, requests // streams), warmup=0
    )
    async with client_for("llama-server", url) as client:
        return await run_concurrency(client, job, CollectingProgress())


if __name__ == "__main__":
    url, streams, requests, tokens, out = sys.argv[1:6]
    summary = event_loop.run(measure(url, int(streams), int(requests), int(tokens)))
    Path(out).write_text(json.dumps(summary, indent=1))
