"""Request bodies and JSON depth are bounded everywhere, with a 413 or 400 that says the limit and
nothing written: the body cap in front of Django (sparkdash/bodylimit.py, through the ASGI
application daphne serves), and the JSON depth of a replay file and of a captured body replayed."""
from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.core.jsonlimits import MAX_JSON_DEPTH
from runs.models import Run
from runs.routing import websocket_urlpatterns as run_sockets
from sparkdash.asgi import application
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, TrafficRecordFactory, UserFactory, team_world
from traffic.routing import websocket_urlpatterns as traffic_sockets

LIMIT = settings.SPARKDASH_MAX_REQUEST_BYTES


def _nested(depth: int) -> dict:
    """A chat request whose message content nests `depth` lists deep (the whole body nests deeper)."""
    content: object = "hello"
    for _ in range(depth):
        content = [content]
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


async def _post(path: str, body: bytes | object, headers: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post(path, content=body, headers=headers)


async def test_it_answers_a_body_over_the_cap_on_the_api_with_json_413():
    response = await _post("/api/runs/1", b"x" * (LIMIT + 1))
    assert response.status_code == 413
    assert response.json() == {
        "error": f"request body too large: {LIMIT + 1:,} bytes; the limit is {LIMIT:,} bytes"}


async def test_it_answers_a_page_body_over_the_cap_with_a_413_that_says_the_limit():
    response = await _post("/login/", b"x" * (LIMIT + 1))
    assert response.status_code == 413
    assert f"the limit is {LIMIT:,} bytes" in response.text
    assert response.headers["content-type"].startswith("text/plain")


async def test_it_counts_a_body_sent_without_a_length_and_stops_it_at_the_cap():
    async def chunks():
        for _ in range(LIMIT // 65536 + 2):
            yield b"x" * 65536

    response = await _post("/api/runs/1", chunks())
    assert response.status_code == 413
    assert response.json()["error"].startswith(f"request body too large: more than {LIMIT:,} bytes")


@pytest.mark.django_db
def test_it_refuses_a_deeply_nested_replay_file_with_the_limit_and_starts_nothing(no_dispatch):
    config = EngineConfigFactory(engine__simulator=True)
    client = Client()
    client.force_login(UserFactory(is_superuser=True))
    # Written out: json.dumps itself cannot nest this deep.
    content = "[" * 100_000 + "1" + "]" * 100_000
    deep = ('{"messages": [{"role": "user", "content": ' + content + "}]}").encode()
    upload = SimpleUploadedFile("deep.jsonl", deep + b"\n", "application/jsonl")
    url = reverse("runs:config-start-run", args=[config.pk])
    response = client.post(url, {"job": "replay", "requests": upload})
    assert response.status_code == 400
    limit = f"line 1: the JSON is nested more than {MAX_JSON_DEPTH} levels deep (the limit)"
    assert limit in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_it_refuses_to_replay_a_captured_body_nested_too_deep(alpha, no_dispatch):
    deep = _nested(MAX_JSON_DEPTH + 10)
    arrived = timezone.now() - timedelta(minutes=1)
    TrafficRecordFactory(machine=alpha.machine, conversation="cd" * 16, request_body=deep, arrived=arrived)
    url = reverse("traffic:replay", args=[alpha.machine.pk, "cd" * 16])
    response = logged_in(alpha.owner).post(url, {"config": alpha.config.pk, "reps": "1"})
    assert response.status_code == 400
    assert f"nested more than {MAX_JSON_DEPTH} levels deep (the limit)" in response.content.decode()
    assert not Run.objects.filter(job="replay").exists()


@pytest.fixture
def no_dispatch(monkeypatch):
    # The worker side is not under test here: keep queued runs queued.
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("socket", ["runs", "traffic"])
async def test_it_leaves_what_a_client_sends_on_a_socket_unparsed(socket):
    alpha = await sync_to_async(team_world)("alpha")
    target = alpha.run.pk if socket == "runs" else alpha.machine.pk
    router = URLRouter(run_sockets + traffic_sockets)
    communicator = WebsocketCommunicator(router, f"/ws/{socket}/{target}/")
    communicator.scope["user"] = alpha.owner
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_to(text_data="[" * 100_000 + "]" * 100_000)
    await asyncio.sleep(0.5)
    # A consumer that parsed it would have died of a RecursionError, ending the socket.
    assert not communicator.future.done()
    await communicator.disconnect()
