"""Reaching the engine: its failures become errors with the status the client should get."""
from __future__ import annotations

import pytest

from tests.traffic.relay.scripted import Scripted, engine
from tests.traffic.relay.test_exchange import dead_url
from traffic.relay.upstream import Upstream, UpstreamError, Wire, error_message

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
