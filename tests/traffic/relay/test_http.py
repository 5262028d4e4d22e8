"""The client's request body, through the relay's socket: a cap told in a 413, a deep nesting a 400."""
from __future__ import annotations

import json
import queue
from collections.abc import Iterator

import httpx
import pytest

from tests.traffic.relay.scripted import Scripted, engine, relay_to
from traffic.relay import Limits, Upstream

pytestmark = pytest.mark.backend_free

SMALL = Limits(max_body=1024)


def chunked(size: int) -> Iterator[bytes]:
    """A JSON body of about `size` bytes with no Content-Length (sent chunked)."""
    yield b'{"model": "m", "prompt": "'
    yield b"x" * size
    yield b'"}'


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat", "/api/show"])
@pytest.mark.parametrize("declared", [True, False])
def test_it_refuses_a_body_over_the_cap_with_413_and_forwards_nothing(path: str, declared: bool) -> None:
    scripted = Scripted([b"{}"], "application/json")
    with engine(scripted) as url, relay_to(Upstream(url, "openai"), limits=SMALL) as relay:
        content = b"".join(chunked(2048)) if declared else chunked(2048)
        answer = httpx.post(relay.url + path, content=content, timeout=10)
        if path != "/api/show":
            assert relay.record().status == 413
    assert answer.status_code == 413
    error = answer.json()["error"]
    assert "the request body exceeded 1 KiB (the relay's --max-body-mb)" in str(error)
    assert scripted.bodies == []


def test_it_takes_a_body_up_to_the_cap() -> None:
    scripted = Scripted([b'{"model": "m", "message": {"content": "ok"}, "done": true}'], "application/json")
    body = json.dumps({"model": "m", "stream": False, "messages": [{"role": "user", "content": "x" * 900}]})
    assert 900 < len(body) <= 1024
    with engine(scripted) as url, relay_to(Upstream(url, "ollama"), limits=SMALL) as relay:
        answer = httpx.post(relay.url + "/api/chat", content=body, timeout=10)
        relay.record()
    assert answer.status_code == 200 and len(scripted.bodies) == 1


def test_it_answers_a_deeply_nested_body_with_400() -> None:
    scripted = Scripted([b"{}"], "application/json")
    body = b'{"model": "m", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with engine(scripted) as url, relay_to(Upstream(url, "openai")) as relay:
        answer = httpx.post(relay.url + "/v1/chat/completions", content=body, timeout=10)
        assert relay.record().status == 400
        with pytest.raises(queue.Empty):
            relay.record(timeout=0.2)
    assert answer.status_code == 400 and "nested too deeply" in answer.json()["error"]["message"]
    assert scripted.bodies == []
