"""Warnings from real traffic: a prefix cache that dropped a conversation, and an agent in a read loop.

- **Prefix-cache discard**: a later step of a conversation (same conversation key, after its first
  request) whose prompt is at least DISCARD_MIN_PROMPT tokens and of which more than
  DISCARD_SHARE was computed again. A continuation normally sends its history plus one turn, so
  nearly all of it should come from the cache; recomputing most of it means the engine had
  dropped the conversation (an unrelated request evicted it, or a cache size limit).
- **The engine's log**: a line saying a prompt "exceeds cache size limit" (llama-server dropping it
  from its RAM cache), as the machine's relay read it from the engine's log file.
- **Read loop**: one conversation's answers call a read tool (READ_TOOLS) on the same path
  READ_LOOP_AT times or more: the threshold at which the agent-table job's read-loop watchdog
  notes a loop (measure.read_loop.NOTE_AT). Only the tool's name and path
  are recorded, so searches that cover one file (which the watchdog counts too) are not counted.

Records are rows or record_json dicts, as traffic.stats reads them. Each warning's "message" is
English; its "text" (a marked template) and "params" let a page show it in the reader's language.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from measure.read_loop import NOTE_AT
from measure.words import gettext_noop
from traffic.stats import field, when

__all__ = [
    "DISCARD_MIN_PROMPT", "DISCARD_SHARE", "READ_LOOP_AT", "READ_TOOLS", "by_conversation", "cache_discards",
    "engine_log_warnings", "read_loops", "traffic_warnings",
]

DISCARD_MIN_PROMPT = 1000
DISCARD_SHARE = 0.5
READ_LOOP_AT = NOTE_AT
READ_TOOLS = frozenset({"read", "read_file", "cat", "open", "open_file", "view", "view_file"})
# The kinds as a page names them (the same words in English; the catalogue has them in Japanese).
KINDS = (gettext_noop("prefix-cache-discard"), gettext_noop("read-loop"))
DISCARD_TEXT = gettext_noop(
    "conversation %(conversation)s, step %(step)s at %(at)s: %(new)s of %(prompt)s prompt tokens "
    "(%(share)s) were computed again; the engine's prefix cache had dropped this conversation"
)
READ_LOOP_TEXT = gettext_noop("conversation %(conversation)s read %(path)s %(times)s times by %(at)s: "
                              "the agent is in a read loop")
ENGINE_LOG_TEXT = gettext_noop(
    "the engine's log at %(at)s: \"%(line)s\": it dropped a prompt from its RAM cache, so that "
    "conversation's next step recomputes it all (raise --cache-ram)"
)


def _worded(text: str, params: dict[str, Any]) -> dict[str, Any]:
    """A warning's words: the English message, and its template and figures for a page to translate."""
    return {"message": text % params, "text": text, "params": params}


def by_conversation(records: Iterable[Any]) -> dict[str, list[Any]]:
    """The records that carry a conversation key, grouped by it, each group in arrival order."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for record in records:
        if field(record, "conversation"):
            groups[field(record, "conversation")].append(record)
    for steps in groups.values():
        steps.sort(key=lambda r: (when(r), field(r, "turn") or 0))
    return dict(groups)


def _discard(conversation: str, step: int, record: Any) -> dict[str, Any] | None:
    prompt, new = field(record, "prompt_tokens"), field(record, "new_prompt_tokens")
    if prompt is None or new is None or prompt < DISCARD_MIN_PROMPT or new <= DISCARD_SHARE * prompt:
        return None
    arrived = when(record)
    params = {"conversation": conversation[:8], "step": step, "at": f"{arrived:%Y-%m-%d %H:%M:%S}",
              "new": f"{new:,}", "prompt": f"{prompt:,}", "share": f"{new / prompt:.0%}"}
    return {
        "kind": "prefix-cache-discard", "conversation": conversation, "step": step,
        "arrived": arrived.isoformat(), "record": field(record, "id"), **_worded(DISCARD_TEXT, params),
    }


def cache_discards(conversations: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every continuation step (not a conversation's first request) that recomputed most of its prompt."""
    found = []
    for key, steps in conversations.items():
        for step, record in enumerate(steps[1:], start=2):
            warning = _discard(key, step, record)
            if warning:
                found.append(warning)
    return found


def _read_loop(conversation: str, steps: Sequence[Any]) -> list[dict[str, Any]]:
    reads: Counter[str] = Counter()
    found = []
    for record in steps:
        for call in field(record, "tool_calls") or []:
            path = call.get("path") if isinstance(call, dict) else None
            if not path or call.get("name") not in READ_TOOLS:
                continue
            reads[path] += 1
            if reads[path] == READ_LOOP_AT:
                arrived = when(record)
                params = {"conversation": conversation[:8], "path": path, "times": READ_LOOP_AT,
                          "at": f"{arrived:%Y-%m-%d %H:%M:%S}"}
                found.append({
                    "kind": "read-loop", "conversation": conversation, "path": path,
                    "arrived": arrived.isoformat(), "record": field(record, "id"),
                    **_worded(READ_LOOP_TEXT, params),
                })
    for warning in found:
        warning["reads"] = reads[warning["path"]]
    return found


def read_loops(conversations: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Each path some conversation read READ_LOOP_AT times or more: when it got there, and its reads."""
    return [w for key, steps in conversations.items() for w in _read_loop(key, steps)]


def engine_log_warnings(items: Iterable[dict[str, str]], since: datetime) -> list[dict[str, Any]]:
    """The engine's own "exceeds cache size limit" lines its relay saw (RelayState.log_warnings)
    at or after `since`, as prefix-cache-discard warnings of no one conversation."""
    found = []
    for item in items:
        at = datetime.fromisoformat(item["at"])
        if at < since:
            continue
        params = {"at": f"{at:%Y-%m-%d %H:%M:%S}", "line": item["line"].strip()}
        found.append({
            "kind": "prefix-cache-discard", "conversation": "", "step": None, "arrived": item["at"],
            "record": None, **_worded(ENGINE_LOG_TEXT, params),
        })
    return found


def traffic_warnings(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Both kinds of warning over the records, in the order they happened."""
    conversations = by_conversation(records)
    found = cache_discards(conversations) + read_loops(conversations)
    return sorted(found, key=lambda w: w["arrived"])
