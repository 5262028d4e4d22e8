"""The run socket when the channel layer dropped messages or forgot its group (a restarted
Redis): it fills the gap from the database, and re-joins and catches up by itself."""
from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from runs.live import consumers
from runs.live.broadcast import broadcast, group_name
from runs.models import Run
from runs.routing import websocket_urlpatterns
from tests.factories import RunFactory, SampleFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

app = URLRouter(websocket_urlpatterns)


@pytest.fixture
def run() -> Run:
    run = RunFactory(status=Run.Status.RUNNING)
    for seq in range(3):
        SampleFactory(run=run, seq=seq)
    return run


async def open_socket(run: Run) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(app, f"/ws/runs/{run.pk}/")
    socket.scope["user"] = await sync_to_async(UserFactory)(is_superuser=True)
    connected, _ = await socket.connect()
    assert connected
    assert (await socket.receive_json_from())["type"] == "run"
    backfill = await socket.receive_json_from()
    assert [s["seq"] for s in backfill["samples"]] == [0, 1, 2]
    return socket


async def store_samples(run: Run, *seqs: int) -> list[dict]:
    samples = [await sync_to_async(SampleFactory)(run=run, seq=seq) for seq in seqs]
    return [s.to_dict() for s in samples]


async def test_it_fills_a_gap_in_the_live_samples_from_the_database(run: Run) -> None:
    socket = await open_socket(run)
    stored = await store_samples(run, 3, 4, 5)
    # Samples 3 and 4 were broadcast while the channel layer was down: only 5 arrives.
    await broadcast(run.pk, {"type": "samples", "samples": stored[2:]})
    message = await socket.receive_json_from()
    assert [s["seq"] for s in message["samples"]] == [3, 4, 5]
    assert await socket.receive_nothing(timeout=0.2)
    await socket.disconnect()


@override_settings(CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}})
async def test_it_rejoins_its_group_and_sends_what_it_missed(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "RESYNC_S", 0.1)
    socket = await open_socket(run)
    layer, group = get_channel_layer(), group_name(run.pk)
    for channel in list(layer.groups.get(group, {})):  # the layer forgets the socket, as a new Redis does
        await layer.group_discard(group, channel)
    stored = await store_samples(run, 3, 4)
    await Run.objects.filter(pk=run.pk).aupdate(status=Run.Status.SUCCEEDED, progress_done=5)
    await broadcast(run.pk, {"type": "samples", "samples": stored})  # reaches nobody
    samples = await socket.receive_json_from(timeout=3)
    assert [s["seq"] for s in samples["samples"]] == [3, 4]
    final = await socket.receive_json_from(timeout=3)
    assert final["run"]["status"] == Run.Status.SUCCEEDED
    assert final["run"]["progress"]["done"] == 5
    assert group in layer.groups
    await socket.disconnect()


@override_settings(CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}})
async def test_it_reads_the_database_only_when_live_events_stop(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "RESYNC_S", 0.5)
    catch_ups = []
    catch_up = consumers.RunConsumer._catch_up

    async def counted(self: consumers.RunConsumer) -> None:
        catch_ups.append(self.last_seq)
        await catch_up(self)

    monkeypatch.setattr(consumers.RunConsumer, "_catch_up", counted)
    socket = await open_socket(run)
    seq, flowing_until = 2, time.monotonic() + 2.0
    while time.monotonic() < flowing_until:  # a live sample every ~0.05 s for 2 s: about 4 resyncs pass
        seq += 1
        stored = await store_samples(run, seq)
        await broadcast(run.pk, {"type": "samples", "samples": stored})
        assert [s["seq"] for s in (await socket.receive_json_from())["samples"]] == [seq]
        await asyncio.sleep(0.05)
    # Reading every time would be ~4; one is allowed for a stall of a loaded box between two samples.
    assert len(catch_ups) <= 1, catch_ups
    before = len(catch_ups)
    await asyncio.sleep(1.2)  # silence: the next resyncs read the database
    assert len(catch_ups) > before and catch_ups[-1] == seq
    await socket.disconnect()
