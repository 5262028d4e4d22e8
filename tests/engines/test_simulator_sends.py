"""The simulator's send log: when it actually wrote each chunk, on a clock other processes share."""
from __future__ import annotations

import time

import httpx
import pytest

from engines.simulator import SimProfile, plan, serve_in_thread
from engines.simulator.sends import SendLog

pytestmark = pytest.mark.backend_free

PROFILE = SimProfile(decode_tps=200.0, ttft_ms=20.0, lookahead=3, acceptance=0.6)
BODY = {"model": "sim", "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 30}


def test_it_logs_each_chunk_between_the_request_and_its_arrival_at_the_client() -> None:
    with serve_in_thread(PROFILE) as sim, httpx.Client(base_url=sim.url) as client:
        sent = time.perf_counter()
        with client.stream("POST", "/v1/chat/completions", json=BODY | {"seed": 7}) as response:
            arrivals = [time.perf_counter() for line in response.iter_lines() if '"content": "' in line]
        received = time.perf_counter()
        (record,) = client.get("/sim/sends").json()["replies"]
    assert record["seed"] == 7
    assert record["tokens"] == [e.n_tokens for e in plan(PROFILE, 30, seed=7).emissions]
    assert sent < record["arrived"] < record["sent"][0]
    assert record["sent"] == sorted(record["sent"]) and record["sent"][-1] < received
    assert all(w < a for w, a in zip(record["sent"], arrivals, strict=True))
    # Written no earlier than scheduled (the due time is the request's arrival + the offset).
    assert all(w >= d for w, d in zip(record["sent"], record["due"], strict=True))


def test_it_keeps_only_the_latest_replies() -> None:
    log = SendLog(keep=2)
    for n in range(3):
        log.open(f"r{n}", seed=n, arrived=0.0)
    log.wrote("r0", due=1.0, n_tokens=1)  # evicted: ignored
    log.wrote("r2", due=1.0, n_tokens=3)
    replies = log.as_dict()["replies"]
    assert [r["id"] for r in replies] == ["r1", "r2"]
    assert replies[1]["tokens"] == [3] and len(replies[1]["sent"]) == 1
