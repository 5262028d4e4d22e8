"""The run socket: stored state first, then the live tail, with nothing missed or repeated.

The channel layer is not trusted to deliver everything: a restarted Redis forgets the socket's
group and drops what was sent while it was down. So a socket re-joins its group every few
seconds and, unless live events arrived meanwhile in order, reads the samples and the run
change it missed from the database; a gap in the sample numbers is filled from it at once.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, cast
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from engines.access import User, visible
from runs.live.broadcast import group_name, note_consumer_loop
from runs.models import Run, Sample

log = logging.getLogger(__name__)

BACKFILL_BATCH = 1000
# How often a socket re-joins its run's group and reads what it may have missed.
RESYNC_S = 3.0


class RunConsumer(AsyncJsonWebsocketConsumer):
    """ws/runs/<id>/?after=SEQ: sends the run, the stored samples after SEQ, then live events."""

    @property
    def _user(self) -> User:
        # AuthMiddlewareStack (sparkdash.asgi) puts a lazy User or AnonymousUser in every scope.
        return cast(User, self.scope["user"])

    async def connect(self) -> None:
        note_consumer_loop()
        if not self._user.is_authenticated:
            await self.close(code=4401)
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.last_seq = _after(self.scope.get("query_string", b""))
        # Join before reading the database, so an event sent meanwhile is queued, not lost.
        await self._join()
        run = await self._run_dict()
        if run is None:
            await self.close(code=4404)
            return
        await self.accept()
        # Live events and resyncs take turns, so a sample is never sent twice or out of order.
        self.turn = asyncio.Lock()
        self.heard = False  # a live event arrived, in order, since the last resync
        async with self.turn:
            await self._send_run(run)
            await self._backfill()
        self.resync = asyncio.create_task(self._resync_until_finished())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # However the socket ends (closed, or its channel layer failed), its resync ends with it.
        try:
            await super().__call__(scope, receive, send)
        finally:
            if getattr(self, "resync", None):
                self.resync.cancel()

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """The socket only sends: what a client sends is dropped unread (never parsed as JSON)."""

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "run_id"):
            # With Redis down there is nothing to leave; its group entry expires by itself.
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)

    async def run_event(self, event: dict[str, Any]) -> None:
        message = event["message"]
        async with self.turn:
            self.heard = True
            if message["type"] == "samples":
                await self._send_samples(message["samples"])
            elif message["type"] == "run":
                if message["run"]["status"] in Run.TERMINAL:
                    await self._backfill()  # every sample before the final status, even missed ones
                await self._send_run(message["run"])
            else:
                await self.send_json(message)

    async def _send_samples(self, samples: list[dict[str, Any]]) -> None:
        fresh = [s for s in samples if s["seq"] > self.last_seq]
        if not fresh:
            return
        if fresh[0]["seq"] != self.last_seq + 1:
            # Some were never delivered (the channel layer restarted): the database has them all,
            # and a run change sent in the gap may be lost too.
            await self._catch_up()
            return
        self.last_seq = fresh[-1]["seq"]
        await self.send_json({"type": "samples", "samples": fresh})

    async def _send_run(self, run: dict[str, Any]) -> None:
        self.last_run = run
        await self.send_json({"type": "run", "run": run})

    async def _resync_until_finished(self) -> None:
        while self.last_run["status"] not in Run.TERMINAL:
            await asyncio.sleep(RESYNC_S)
            try:
                await self._resync()
            except Exception as exc:  # Redis or the database still down: try again next time
                log.warning("run socket %s: resync failed: %s", self.run_id, exc)

    async def _join(self) -> None:
        try:
            await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        except Exception as exc:
            # After a Redis restart the first use of each pooled connection fails; a second try
            # gets a fresh one, instead of failing the browser's first reconnection.
            log.info("run socket %s: joining again after %r", self.run_id, exc)
            await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)

    async def _resync(self) -> None:
        """Re-join the group, then send the samples and the run change the socket missed.

        While live events keep arriving in order the group is alive and nothing was missed, so
        the database is left alone: with many pages open, reading it every few seconds for each
        was most of the server's work (see tests/bench/live_latency.py).
        """
        await self._join()
        async with self.turn:
            if self.heard:
                self.heard = False
                return
            await self._catch_up()

    async def _catch_up(self) -> None:
        await self._backfill()
        run = await self._run_dict()
        if run is not None and run != self.last_run:
            await self._send_run(run)

    async def _backfill(self) -> None:
        while batch := await self._samples_after(self.last_seq):
            await self.send_json({"type": "samples", "samples": batch})
            self.last_seq = batch[-1]["seq"]

    @database_sync_to_async
    def _run_dict(self) -> dict[str, Any] | None:
        # Another team's run answers as a missing one (4404), so its existence is not revealed.
        runs = visible(self._user, Run.objects.select_related("config__engine", "machine", "revision"))
        run = runs.filter(pk=self.run_id).first()
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
