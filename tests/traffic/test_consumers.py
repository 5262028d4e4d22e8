"""The Traffic socket: a team member's socket hears the machine's stored records; nobody else's does."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from sparkdash.asgi import application
from tests.factories import TrafficRecordFactory, UserFactory, team_world
from traffic.live import broadcast_records
from traffic.routing import websocket_urlpatterns
from traffic.serialize import record_json

pytestmark = pytest.mark.django_db(transaction=True)

app = URLRouter(websocket_urlpatterns)


async def connect(machine_id, user, router=app):
    communicator = WebsocketCommunicator(router, f"/ws/traffic/{machine_id}/")
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


async def test_it_passes_on_the_records_broadcast_for_the_machine():
    alpha = await sync_to_async(team_world)("alpha")
    communicator, connected, _ = await connect(alpha.machine.pk, alpha.teammate)
    assert connected
    record = await sync_to_async(TrafficRecordFactory)(machine=alpha.machine, ttft_s=0.31)
    sent = [await sync_to_async(record_json)(record)]
    # The writer broadcasts from its own thread, as this does.
    await sync_to_async(broadcast_records)(alpha.machine.pk, sent)
    message = await communicator.receive_json_from(timeout=5)
    assert message == {"type": "traffic.records", "records": sent}
    assert message["records"][0]["ttft_s"] == 0.31
    await communicator.disconnect()


async def test_it_hears_nothing_of_another_machine():
    alpha, bravo = await sync_to_async(team_world)("alpha"), await sync_to_async(team_world)("bravo")
    communicator, connected, _ = await connect(alpha.machine.pk, alpha.owner)
    assert connected
    await sync_to_async(broadcast_records)(bravo.machine.pk, [{"id": 1}])
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_it_refuses_another_team_and_anonymous_users_and_lets_a_superuser_in():
    alpha, bravo = await sync_to_async(team_world)("alpha"), await sync_to_async(team_world)("bravo")
    for user, refused in ((bravo.owner, 4404), (AnonymousUser(), 4401)):
        _, connected, code = await connect(alpha.machine.pk, user)
        assert (connected, code) == (False, refused)
    _, connected, code = await connect(999_999, alpha.owner)
    assert (connected, code) == (False, 4404)
    root = await sync_to_async(UserFactory)(username="root", is_superuser=True, teams=[])
    communicator, connected, _ = await connect(alpha.machine.pk, root)
    assert connected
    await communicator.disconnect()


async def test_it_is_routed_by_the_sites_application():
    world = await sync_to_async(team_world)("alpha")
    host = (b"host", b"testserver")
    own = WebsocketCommunicator(application, f"/ws/traffic/{world.machine.pk}/",
                                headers=[(b"origin", b"http://testserver"), host])
    connected, code = await own.connect()
    # Through the site's routes, origin check and session auth: no session, so the login check's 4401.
    assert (connected, code) == (False, 4401)
