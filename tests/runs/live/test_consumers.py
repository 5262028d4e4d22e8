import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from runs.live.broadcast import broadcast
from runs.routing import websocket_urlpatterns
from tests.factories import RunFactory, SampleFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

app = URLRouter(websocket_urlpatterns)


async def connect(run_id, user, after=None):
    path = f"/ws/runs/{run_id}/" + (f"?after={after}" if after is not None else "")
    communicator = WebsocketCommunicator(app, path)
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


@pytest.fixture
def run_with_samples(db):
    run = RunFactory(status="running")
    for seq in range(5):
        SampleFactory(run=run, seq=seq)
    return run


async def test_it_refuses_anonymous_users(run_with_samples):
    _, connected, code = await connect(run_with_samples.pk, AnonymousUser())
    assert not connected
    assert code == 4401


async def sign_in():
    return await sync_to_async(UserFactory)()


async def test_it_refuses_an_unknown_run(run_with_samples):
    _, connected, code = await connect(999_999, await sign_in())
    assert not connected
    assert code == 4404


async def test_it_sends_the_stored_run_then_the_samples_after_the_given_seq(run_with_samples):
    communicator, connected, _ = await connect(run_with_samples.pk, await sign_in(), after=2)
    assert connected
    first = await communicator.receive_json_from()
    assert first["type"] == "run"
    assert first["run"]["id"] == run_with_samples.pk
    second = await communicator.receive_json_from()
    assert [s["seq"] for s in second["samples"]] == [3, 4]
    await communicator.disconnect()


async def test_it_forwards_live_samples_once_each(run_with_samples):
    communicator, _, _ = await connect(run_with_samples.pk, await sign_in())
    await communicator.receive_json_from()
    backfill = await communicator.receive_json_from()
    assert [s["seq"] for s in backfill["samples"]] == [0, 1, 2, 3, 4]
    # A broadcast overlapping what was backfilled only delivers the new sample.
    samples = [{"seq": s, "t": 0.0, "kind": "request", "values": {}} for s in (4, 5)]
    await broadcast(run_with_samples.pk, {"type": "samples", "samples": samples})
    message = await communicator.receive_json_from()
    assert [s["seq"] for s in message["samples"]] == [5]
    await broadcast(run_with_samples.pk, {"type": "samples", "samples": samples})
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()
