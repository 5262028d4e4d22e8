"""Turning the relay's record (plain Python) into its row: aware arrival time, tool calls as JSON."""
from __future__ import annotations

from dataclasses import asdict, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import models

from traffic.models import TrafficRecord as TrafficRow
from traffic.relay.record import TrafficRecord

_COPIED = [f.name for f in fields(TrafficRecord) if f.name not in ("arrived", "tool_calls")]
# Text the relay passes on from clients (a user agent, a model name) may outgrow its column;
# cut, it is still stored, where Postgres would refuse the whole record.
_LIMITS = {
    f.name: f.max_length for f in TrafficRow._meta.get_fields()
    if isinstance(f, models.CharField) and f.max_length
}


def to_row(machine_id: int, record: TrafficRecord, engine_id: int | None) -> TrafficRow:
    """The unsaved row of a record relayed on machine `machine_id` to engine `engine_id`."""
    values: dict[str, Any] = {name: getattr(record, name) for name in _COPIED}
    for name, limit in _LIMITS.items():
        if isinstance(values.get(name), str):
            values[name] = values[name][:limit]
    return TrafficRow(
        machine_id=machine_id,
        engine_id=engine_id,
        arrived=datetime.fromtimestamp(record.arrived, tz=UTC),
        tool_calls=[_tool_call(call) for call in record.tool_calls],
        **(values | {"response_text": record.response_text or ""}),  # "": not captured
    )


def _tool_call(call: Any) -> dict[str, str]:
    data = asdict(call) if is_dataclass(call) and not isinstance(call, type) else dict(call)
    return {"name": str(data.get("name", "")), "path": str(data.get("path", ""))}
