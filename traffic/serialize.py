"""One JSON shape for a stored traffic record: the Traffic page's API and its socket both send it."""
from __future__ import annotations

from typing import Any

from traffic.models import TrafficRecord

# The figures and labels a page shows; bodies (request_body, response_text) are never sent here:
# only the machine's team may see them, on pages that check it.
FIELDS = (
    "key", "front", "upstream", "path", "client", "model", "status",
    "ttft_s", "generation_s", "e2e_s", "decode_tps_client", "decode_tps_engine",
    "prompt_tokens", "new_prompt_tokens", "output_tokens", "output_type",
    "draft_tokens", "accepted_tokens", "finish_reason", "error", "conversation", "turn",
)  # fmt: skip


def record_json(row: TrafficRecord) -> dict[str, Any]:
    """A stored record as JSON-ready values: id, machine and engine ids, arrival (ISO 8601), figures."""
    values: dict[str, Any] = {field: getattr(row, field) for field in FIELDS}
    values |= {
        "id": row.pk,
        "machine_id": row.machine_id,
        "engine_id": row.engine_id,
        "arrived": row.arrived.isoformat(),
        "tool_calls": list(row.tool_calls or []),
    }
    return values
