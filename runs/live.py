"""Broadcasting run events to the browsers watching a run (one Channels group per run)."""
from __future__ import annotations

import logging
from typing import Any

from channels.layers import get_channel_layer

log = logging.getLogger(__name__)


def group_name(run_id: int) -> str:
    """The Channels group every socket watching run `run_id` joins."""
    return f"run-{run_id}"


async def broadcast(run_id: int, message: dict[str, Any]) -> None:
    """Send one message to the run's watchers; a broken channel layer never stops a run.

    Watchers that miss a message backfill from the database when they reconnect.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group_name(run_id), {"type": "run.event", "message": message})
    except Exception as exc:  # Redis down or restarting: the run goes on, the DB has everything.
        log.warning("live update for run %s not sent: %s", run_id, exc)
