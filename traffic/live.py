"""Pushing stored traffic records to the browsers watching a machine's Traffic page.

One Channels group per machine. The writer calls `broadcast_records` after each stored batch,
from its own thread; a channel layer that is down never holds the relay or the writer up
(pages backfill from the database when they reconnect or poll). The relay is its own process,
so only a shared layer (Redis) reaches the dashboard's sockets; the embedded default's page polls.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

EVENT_TYPE = "traffic.records"  # the consumer's handler: traffic_records


def group_name(machine_id: int) -> str:
    """The Channels group every socket watching machine `machine_id`'s traffic joins."""
    return f"traffic-{machine_id}"


def broadcast_records(machine_id: int, records: Sequence[dict[str, Any]]) -> None:
    """Send stored records (JSON-ready dicts, as the page's API gives them) to the machine's watchers."""
    layer = get_channel_layer()
    if layer is None or not records:
        return
    try:
        event = {"type": EVENT_TYPE, "records": list(records)}
        async_to_sync(layer.group_send)(group_name(machine_id), event)
    except Exception as exc:  # Redis down or restarting: the records are stored, pages backfill.
        log.warning("live traffic for machine %s not sent: %s", machine_id, exc)
