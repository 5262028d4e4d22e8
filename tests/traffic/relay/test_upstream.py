"""Reaching the engine: its failures become errors with the status the client should get."""
from __future__ import annotations

from collections import Counter

import httpx
import pytest

from engines.clients.lines import MIB
from measure import event_loop
from tests.engines.resetting import resetting_engine
from tests.traffic.relay.scripted import Scripted, engine, relay_to
from tests.traffic.relay.test_exchange import dead_url
from traffic.relay.upstream import Limits, Upstream, UpstreamError, Wire, error_message

pytestmark = pytest.mark.backend_free


def test_it_reads_the_message_of_either_apis_error_body() -> None:
    assert error_message(b'{"error": "model not found"}') == "model not found"
    assert error_message(b'{"error": {"message": "too long", "code": 400}}') == "too long"
    assert error_message(b"<html>Bad Gateway</html>") == "<html>Bad Gateway</html>"
    assert error_message(b"") == "(empty body)"


async def test_it_calls_a_dead_engine_unreachable() -> None:
    wire = Wire()
    with pytest.raises(UpstreamError, match="cannot reach the engine") as caught:
        await wire.json(Upstream(dead_url(), "ollama"), "GET", "/api/tags")
    await wire.aclose()
    assert caught.value.status == 502


async def test_it_passes_on_the_engines_http_status_and_sends_the_key() -> None:
    refusing = Scripted([b'{"error": "loading model"}'], "application/json", status=503)
    wire = Wire()
    with engine(refusing) as url, pytest.raises(UpstreamError, match="HTTP 503: loading model") as caught:
        await wire.read(Upstream(url, "ollama", api_key="secret"), "POST", "/api/chat", {"model": "m"})
    await wire.aclose()
    assert caught.value.status == 503 and refusing.bodies == [{"model": "m"}]
    assert refusing.headers[0][b"authorization"] == b"Bearer secret"


@pytest.mark.parametrize(("api", "path"), [("openai", "/v1/chat/completions"), ("ollama", "/api/chat")])
def test_it_ends_a_stream_whose_line_runs_past_the_bound_and_stops_reading(api: str, path: str) -> None:
    start = b"data: " if api == "openai" else b'{"message": {"content": "'
    endless = Scripted([start, *[b"x" * 65536] * 64], "text/event-stream", forever=True)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with engine(endless) as url, relay_to(Upstream(url, api), limits=Limits(max_line=MIB)) as relay:
        with httpx.stream("POST", f"{relay.url}{path}", json=body, timeout=10) as response:
            text = response.read().decode()
        record = relay.record()
        assert endless.client_left.wait(5)  # the relay closed the engine's answer
    assert response.status_code == 200  # the stream had begun: the error is its last event
    assert "a streamed line exceeded 1 MiB (the relay's --max-line-mb)" in text
    assert "a streamed line exceeded 1 MiB" in record.error


async def test_it_refuses_a_whole_answer_over_the_body_cap() -> None:
    huge = Scripted([b'{"models": ["' + b"x" * 4096 + b'"]}'], "application/json")
    wire = Wire(Limits(max_body=1024))
    with engine(huge) as url, pytest.raises(UpstreamError, match="exceeded 1 KiB") as caught:
        await wire.json(Upstream(url, "ollama"), "GET", "/api/tags")
    await wire.aclose()
    assert caught.value.status == 502


async def _statuses(url: str, attempts: int) -> Counter[int]:
    wire, seen = Wire(), Counter[int]()
    for _ in range(attempts):
        with pytest.raises(UpstreamError) as caught:
            await wire.json(Upstream(url, "ollama"), "GET", "/api/tags")
        seen[caught.value.status] += 1
    await wire.aclose()
    return seen


def test_it_calls_an_engine_resetting_connections_as_they_open_unreachable_on_uvloop() -> None:
    # uvicorn serves the relay on uvloop, which loses such a connection's socket: before the relay
    # caught that, a bare AttributeError escaped from httpcore for a few percent of requests.
    with resetting_engine() as url:
        assert event_loop.run(_statuses(url, 300)) == {502: 300}
