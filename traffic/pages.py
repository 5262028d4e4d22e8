"""What the Traffic pages show, read from the database: the relay's state, a window's figures, the
records after an id, and a machine's conversations. The views only pick the machine and render."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils.translation import gettext

from engines.models import Machine
from traffic.models import RelayState, TrafficRecord
from traffic.serialize import record_json, with_steps
from traffic.stats import WINDOWS, new_input_share, window_start, window_stats
from traffic.texts import figure_texts, relay_texts
from traffic.warnings import by_conversation, engine_log_warnings, traffic_warnings

__all__ = ["LATEST", "conversation_rows", "payload", "relay_summary", "shown_warnings", "window_records"]

LATEST = 50  # rows of the latest-requests table, and the most records one poll answers
BODIES = ("request_body", "response_text")


def relay_summary(state: RelayState | None, now: datetime) -> dict[str, Any] | None:
    """The relay's last word about itself and how old it is; None when no relay ever ran here."""
    if state is None:
        return None
    age = (now - state.heartbeat).total_seconds()
    return {
        "addresses": state.addresses, "upstream": state.upstream, "started": state.started.isoformat(),
        "heartbeat": state.heartbeat.isoformat(), "age_s": round(age, 1),
        "stale": age > settings.SPARKDASH_RELAY_ACTIVE_S,  # the busy rule's limit: past it, runs may start
        "accepted": state.accepted, "stored": state.stored, "buffered": state.buffered,
        "dropped": state.dropped, "last_error": state.last_error,
    }


def shown_warnings(warnings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The warnings with their code's label ("code_label") and words ("shown") in the reader's
    language; the code (stored under "kind") and the English "message" stay as they are."""
    return [w | {"code_label": gettext(w["kind"]), "shown": gettext(w["text"]) % w["params"]}
            for w in warnings]


def window_records(machine: Machine, start: datetime) -> QuerySet[TrafficRecord]:
    """The machine's records since `start`, oldest first, without their bodies."""
    rows = TrafficRecord.objects.filter(machine=machine, arrived__gte=start).defer(*BODIES)
    return rows.order_by("arrived", "pk")


def payload(machine: Machine, window: str, since: int, now: datetime, with_stats: bool) -> dict[str, Any]:
    """The records after id `since` (the latest LATEST of them, oldest first), the relay's state,
    and, when asked or when there are new records, the window's figures (and their texts) and warnings."""
    # Bodies are read (not deferred): record_json says whether each was captured, never what it holds.
    rows = with_steps(TrafficRecord.objects.filter(machine=machine, pk__gt=since)).order_by("-pk")[:LATEST]
    records = [record_json(row) for row in reversed(rows)]
    state = RelayState.objects.filter(machine=machine).first()
    relay = relay_summary(state, now)
    answer: dict[str, Any] = {
        "records": records, "last_id": records[-1]["id"] if records else since, "window": window,
        "relay": relay, "relay_texts": relay_texts(relay, machine.command_args.removeprefix("MACHINE=")),
        "stats": None, "texts": None, "warnings": None,
    }
    if with_stats or records:
        start = window_start(now, WINDOWS[window])
        inside = list(window_records(machine, start))
        answer["stats"] = window_stats(inside, start, now)
        answer["texts"] = figure_texts(answer["stats"])
        found = traffic_warnings(inside) + engine_log_warnings(state.log_warnings if state else [], start)
        answer["warnings"] = shown_warnings(sorted(found, key=lambda w: w["arrived"]))
    return answer


def conversation_rows(records: list[TrafficRecord]) -> list[dict[str, Any]]:
    """One row per conversation key: first and last seen, steps, tokens, new-input share, warnings.

    Newest conversation first.
    """
    warnings: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for warning in shown_warnings(traffic_warnings(records)):
        warnings[warning["conversation"]].append(warning)
    rows = []
    for key, steps in by_conversation(records).items():
        share = new_input_share(steps)
        rows.append({
            "key": key, "first_seen": steps[0].arrived, "last_seen": steps[-1].arrived, "steps": len(steps),
            "model": steps[-1].model,
            "prompt_tokens": sum(s.prompt_tokens or 0 for s in steps),
            "output_tokens": sum(s.output_tokens or 0 for s in steps),
            "new_input_share": share["share"] if share else None,
            "new_input_text": f"{share['share'] * 100:.1f} %" if share else "\u2014",
            "errors": sum(1 for s in steps if s.error or s.status >= 400),
            "warnings": warnings.get(key, []),
        })
    return sorted(rows, key=lambda row: row["last_seen"], reverse=True)
