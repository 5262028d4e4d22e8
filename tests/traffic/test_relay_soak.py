"""By hand (SPARKDASH_RELAY_SOAK=N): N requests through `manage.py relay` to the real llama-server,
streamed and not alternating, after idle gaps drawn half from 0-10 s and half from 4.8-5.2 s (around
llama-server's 5 s keep-alive); none may be answered 502. About 5 s per request, so never in CI:
`SPARKDASH_RELAY_SOAK=200 .venv/bin/pytest tests/traffic/test_relay_soak.py -s` with Postgres."""
from __future__ import annotations

import os
import random
import time

import httpx
import pytest

from tests.factories import EngineFactory
from tests.real_engine import llama_server_process, requires_engine
from tests.traffic.conftest import postgres_only, relay_process
from traffic.models import TrafficRecord

REQUESTS = int(os.environ.get("SPARKDASH_RELAY_SOAK", "0"))

pytestmark = [
    requires_engine, postgres_only, pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REQUESTS, reason="a soak by hand: set SPARKDASH_RELAY_SOAK=<requests>"),
]


def test_it_answers_every_request_after_any_idle_gap():
    rng, statuses = random.Random(7), []
    with llama_server_process("--metrics") as (url, _), httpx.Client(timeout=120) as client:
        engine = EngineFactory(base_url=url, kind="llama-server")
        with relay_process(engine.machine) as addresses:
            for i in range(REQUESTS):
                time.sleep(rng.choice([rng.uniform(0, 10), rng.uniform(4.8, 5.2)]))
                body = {"model": "gemma", "max_tokens": 4, "stream": i % 2 == 1,
                        "messages": [{"role": "user", "content": f"Say {i}."}]}
                answer = client.post(addresses["openai"] + "/v1/chat/completions", json=body)
                statuses.append(answer.status_code)
    failed = [(i, s) for i, s in enumerate(statuses) if s != 200]
    print(f"\n{REQUESTS} requests through the relay: {len(failed)} not answered 200: {failed}")
    assert failed == [] and TrafficRecord.objects.filter(machine=engine.machine).count() == REQUESTS
