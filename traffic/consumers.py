"""The Traffic page's socket: the records the writer stores for one machine, as they are stored.

ws/traffic/<machine_id>/ sends {"type": "traffic.records", "records": [...]} (record_json dicts)
for each batch traffic.live.broadcast_records sends. Nothing is backfilled here: the page loads
and catches up through records.json, and polls it whenever the socket stays quiet (the embedded
default's in-memory layer never hears the relay's process).
"""
from __future__ import annotations

import contextlib
from typing import Any, cast

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from engines.access import User, visible
from engines.models import Machine
from traffic.live import EVENT_TYPE, group_name


class TrafficConsumer(AsyncJsonWebsocketConsumer):
    """Joins the machine's group for a user who may see the machine; 4401 anonymous, 4404 otherwise."""

    @property
    def _user(self) -> User:
        # AuthMiddlewareStack (sparkdash.asgi) puts a lazy User or AnonymousUser in every scope.
        return cast(User, self.scope["user"])

    async def connect(self) -> None:
        if not self._user.is_authenticated:
            await self.close(code=4401)
            return
        machine_id = int(self.scope["url_route"]["kwargs"]["machine_id"])
        if not await self._may_see(machine_id):
            # Another team's machine answers as a missing one, so its existence is not revealed.
            await self.close(code=4404)
            return
        self.machine_id = machine_id
        await self.channel_layer.group_add(group_name(machine_id), self.channel_name)
        await self.accept()

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """The socket only sends: what a client sends is dropped unread (never parsed as JSON)."""

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "machine_id"):
            with contextlib.suppress(Exception):  # Redis down: the group entry expires by itself
                await self.channel_layer.group_discard(group_name(self.machine_id), self.channel_name)

    async def traffic_records(self, event: dict[str, Any]) -> None:
        """One stored batch from the writer, passed on as it came."""
        await self.send_json({"type": EVENT_TYPE, "records": event["records"]})

    @database_sync_to_async
    def _may_see(self, machine_id: int) -> bool:
        return visible(self._user, Machine).filter(pk=machine_id).exists()
