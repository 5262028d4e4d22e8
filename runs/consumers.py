"""The run socket: stored state first, then the live tail, with nothing missed or repeated."""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from runs.live import group_name, note_consumer_loop
from runs.models import Run, Sample

BACKFILL_BATCH = 1000


class RunConsumer(AsyncJsonWebsocketConsumer):
    """ws/runs/<id>/?after=SEQ: sends the run, the stored samples after SEQ, then live events."""

    async def connect(self) -> None:
        note_consumer_loop()
        if not self.scope["user"].is_authenticated:
            await self.close(code=4401)
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.last_seq = _after(self.scope.get("query_string", b""))
        # Join before reading the database, so an event sent meanwhile is queued, not lost.
        await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        run = await self._run_dict()
        if run is None:
            await self.close(code=4404)
            return
        await self.accept()
        await self.send_json({"type": "run", "run": run})
        await self._backfill()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "run_id"):
            await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)

    async def run_event(self, event: dict[str, Any]) -> None:
        message = event["message"]
        if message["type"] == "samples":
            fresh = [s for s in message["samples"] if s["seq"] > self.last_seq]
            if not fresh:
                return
            self.last_seq = fresh[-1]["seq"]
            message = {"type": "samples", "samples": fresh}
        await self.send_json(message)

    async def _backfill(self) -> None:
        while batch := await self._samples_after(self.last_seq):
            await self.send_json({"type": "samples", "samples": batch})
            self.last_seq = batch[-1]["seq"]

    @database_sync_to_async
    def _run_dict(self) -> dict[str, Any] | None:
        run = Run.objects.select_related("config__engine", "machine").filter(pk=self.run_id).first()
        return dict(run.to_dict()) if run else None

    @database_sync_to_async
    def _samples_after(self, seq: int) -> list[dict[str, Any]]:
        rows = Sample.objects.filter(run_id=self.run_id, seq__gt=seq).order_by("seq")[:BACKFILL_BATCH]
        return [s.to_dict() for s in rows]


def _after(query_string: bytes) -> int:
    values = parse_qs(query_string.decode("latin-1")).get("after", ["-1"])
    try:
        return int(values[0])
    except ValueError:
        return -1
