"""Broadcasting run events to the browsers watching a run (one Channels group per run)."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer

log = logging.getLogger(__name__)

HOP_TIMEOUT_S = 5.0
# The loop this process's consumers receive on. The in-memory layer's queues are plain asyncio
# queues of that loop; an in-process worker (its own thread and loop) must send on it, or the
# message waits until something else wakes that loop (daphne: up to a second).
_consumer_loop: asyncio.AbstractEventLoop | None = None


def group_name(run_id: int) -> str:
    """The Channels group every socket watching run `run_id` joins."""
    return f"run-{run_id}"


def note_consumer_loop() -> None:
    """Record the running loop as the one consumers receive on (RunConsumer calls it)."""
    global _consumer_loop
    _consumer_loop = asyncio.get_running_loop()


async def broadcast(run_id: int, message: dict[str, Any]) -> None:
    """Send one message to the run's watchers; a broken channel layer never stops a run.

    Watchers that miss a message backfill from the database when they reconnect.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await _group_send(layer, group_name(run_id), {"type": "run.event", "message": message})
    except Exception as exc:  # Redis down or restarting: the run goes on, the DB has everything.
        log.warning("live update for run %s not sent: %s", run_id, exc)


async def _group_send(layer: BaseChannelLayer, group: str, event: dict[str, Any]) -> None:
    loop = _consumer_loop
    if (
        isinstance(layer, InMemoryChannelLayer)
        and loop is not None
        and loop.is_running()
        and loop is not asyncio.get_running_loop()
    ):
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, event), loop)
        await asyncio.wait_for(asyncio.wrap_future(future), HOP_TIMEOUT_S)
    else:
        # A Redis that stopped answering (not refusing) would otherwise hold the run up.
        await asyncio.wait_for(layer.group_send(group, event), HOP_TIMEOUT_S)
