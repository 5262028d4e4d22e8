"""A stored traffic record as the page, its JSON endpoint and its socket give it: figures, never bodies."""
from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from traffic.models import TrafficRecord

__all__ = ["FIGURES", "record_json", "with_steps"]

# The record's own fields, copied as they are (times in seconds, counts in tokens).
FIGURES = (
    "key", "front", "upstream", "path", "client", "model", "status", "ttft_s", "generation_s", "e2e_s",
    "decode_tps_client", "decode_tps_engine", "prompt_tokens", "new_prompt_tokens", "output_tokens",
    "output_type", "draft_tokens", "accepted_tokens", "finish_reason", "error", "conversation", "turn",
)


def with_steps(rows: QuerySet[TrafficRecord]) -> QuerySet[TrafficRecord]:
    """The rows, each with `step`: its place among its conversation's requests on its machine, in
    the order they arrived (1 for the first), as the conversation page numbers them. (A record's
    `turn` is the number of messages it sent: a retry sends as many as the request it repeats.)"""
    earlier = TrafficRecord.objects.filter(
        Q(arrived__lt=OuterRef("arrived")) | Q(arrived=OuterRef("arrived"), pk__lt=OuterRef("pk")),
        machine=OuterRef("machine"), conversation=OuterRef("conversation"),
    ).exclude(conversation="").order_by().values("conversation").annotate(n=Count("pk")).values("n")
    found = Coalesce(Subquery(earlier, output_field=IntegerField()), Value(0))
    return rows.annotate(step=found + 1)


def record_json(row: TrafficRecord) -> dict[str, Any]:
    """The row as JSON-ready values: id, machine, arrived (ISO 8601), every figure and the tool calls.

    The captured request and answer never go in: whoever gets this dict may not be the machine's
    team (a log, a script); `captured` only says whether the conversation page has them.
    """
    figures = {name: getattr(row, name) for name in FIGURES}
    return {
        "id": row.pk,
        "machine": row.machine_id,
        "engine": row.engine_id,
        "arrived": row.arrived.isoformat(),
        **figures,
        "tool_calls": tool_calls(row.tool_calls),
        "captured": row.request_body is not None,
        "step": getattr(row, "step", None),
    }


def tool_calls(stored: Any) -> list[dict[str, str]]:
    """The stored tool calls as {"name", "path"} pairs; anything else in the column is left out."""
    calls = stored if isinstance(stored, list) else []
    kept = [c for c in calls if isinstance(c, dict)]
    return [{"name": str(c.get("name", "")), "path": str(c.get("path", ""))} for c in kept]
