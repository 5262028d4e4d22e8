"""The relay's gate, through its socket: no live token, no engine; the stored key only with the token."""
from __future__ import annotations

import json
import logging
import queue

import httpx
import pytest

from tests.traffic.relay.scripted import Scripted, engine, ndjson, relay_to
from traffic.relay import Admission, Upstream
from traffic.relay.gate import presented_token

pytestmark = pytest.mark.backend_free

TOKEN = "sdr_the-right-one"
STORED_KEY = "sk-stored-engine-key"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}
OPENAI_ANSWER = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                         "finish_reason": "stop"}]}).encode()
OLLAMA_ANSWER = ndjson({"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": True,
                        "done_reason": "stop"})  # fmt: skip


def by_token(token: str) -> Admission:
    return Admission.WITH_KEY if token == TOKEN else Admission.REFUSED


def openai_engine() -> Scripted:
    return Scripted([OPENAI_ANSWER], "application/json")


def chat(url: str, front: str, headers: dict[str, str] | None = None) -> httpx.Response:
    path = "/v1/chat/completions" if front == "openai" else "/api/chat"
    return httpx.post(url + path, json=CHAT, headers=headers or {}, timeout=10)


@pytest.mark.parametrize("front", ["openai", "ollama"])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer sdr_wrong"}, {"Authorization": TOKEN},
                                     {"X-SparkDash-Relay-Token": "sdr_wrong"}])
def test_it_refuses_a_request_without_a_live_token_before_the_engine_sees_it(front, headers) -> None:
    scripted = openai_engine()
    with engine(scripted) as url, relay_to(Upstream(url, "openai", api_key=STORED_KEY), by_token) as relay:
        answer = chat(relay.url, front, headers)
        with pytest.raises(queue.Empty):
            relay.record(timeout=0.3)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    error = answer.json()["error"]
    message = error["message"] if front == "openai" else error
    assert "no valid relay token" in message and "Authorization: Bearer <token>" in message
    assert scripted.bodies == [] and scripted.headers == []  # the engine was never asked


def test_it_refuses_every_route_but_the_banner_without_a_token() -> None:
    scripted = Scripted([b'{"models": []}'], "application/json")
    with engine(scripted) as url, relay_to(Upstream(url, "ollama", api_key=STORED_KEY), by_token) as relay:
        assert httpx.get(relay.url + "/", timeout=10).text == "Ollama is running"  # no engine behind it
        routes = [("GET", "/api/tags"), ("GET", "/api/version"), ("GET", "/v1/models"), ("POST", "/api/show"),
                  ("POST", "/api/generate"), ("GET", "/nowhere")]  # fmt: skip
        refused = [httpx.request(method, relay.url + path, timeout=10).status_code for method, path in routes]
    assert refused == [401] * 6
    assert scripted.headers == []


@pytest.mark.parametrize(("front", "headers"), [
    ("openai", {"Authorization": f"Bearer {TOKEN}"}),
    ("ollama", {"Authorization": f"bearer {TOKEN}"}),
    ("ollama", {"X-SparkDash-Relay-Token": TOKEN, "Authorization": "Bearer something-else"}),
])  # fmt: skip
def test_it_adds_the_stored_key_only_for_the_token_and_never_passes_the_token_on(front, headers) -> None:
    scripted = openai_engine()
    with engine(scripted) as url, relay_to(Upstream(url, "openai", api_key=STORED_KEY), by_token) as relay:
        answer = chat(relay.url, front, headers)
        assert relay.record().status == 200
    assert answer.status_code == 200
    seen = scripted.headers[0]
    assert seen[b"authorization"] == f"Bearer {STORED_KEY}".encode()
    assert b"x-sparkdash-relay-token" not in seen
    assert not any(TOKEN.encode() in value for value in seen.values())


def test_it_forwards_without_the_stored_key_when_open() -> None:
    # The default gate (a relay on loopback with no token issued): requests go on, the key never does.
    scripted = Scripted(OLLAMA_ANSWER, "application/x-ndjson")
    with engine(scripted) as url, relay_to(Upstream(url, "ollama", api_key=STORED_KEY)) as relay:
        answer = chat(relay.url, "ollama", {"Authorization": "Bearer anything"})
        relay.record()
    assert answer.status_code == 200
    assert b"authorization" not in scripted.headers[0]


def test_it_logs_refusals_without_the_token_and_at_most_once_per_interval(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="traffic.relay.gate")
    with engine(openai_engine()) as url, relay_to(Upstream(url, "openai"), by_token) as relay:
        for _ in range(5):
            chat(relay.url, "openai", {"Authorization": "Bearer sdr_guess"})
    lines = [r.getMessage() for r in caplog.records if r.name == "traffic.relay.gate"]
    assert len(lines) == 1 and "refused 1 request(s)" in lines[0]
    assert "sdr_guess" not in caplog.text


def test_it_reads_the_token_from_either_header() -> None:
    def scope(*headers: tuple[bytes, bytes]) -> dict:
        return {"headers": list(headers)}

    assert presented_token(scope((b"authorization", b"Bearer  abc "))) == "abc"
    assert presented_token(scope((b"authorization", b"Basic abc"))) == ""
    both = scope((b"x-sparkdash-relay-token", b"def"), (b"authorization", b"Bearer abc"))
    assert presented_token(both) == "def"
    assert presented_token(scope()) == ""
