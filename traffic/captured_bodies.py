"""A recorded conversation's captured bodies as a replay run's requests: each in the API of the engine
the replay runs on.

The relay records each body as its client sent it, in the client's API; a replay on another kind
of engine sends it through that engine's own client, so a body recorded on the Ollama front is
carried over to the OpenAI-compatible shape (tool calls' arguments as JSON text, call ids and
types) and back, with the relay's own conversion. An engine whose chat template refuses a second
system message gets them merged, as its relay would.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engines.models import Engine
from traffic.models import TrafficRecord
from traffic.relay.translate import merge_system, ollama_to_openai, openai_to_ollama
from traffic.upstream import wire_api

CHAT_PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}


def replay_requests(steps: Iterable[TrafficRecord], engine: Engine) -> list[dict[str, Any]]:
    """The captured chat bodies of `steps`, in order, as `engine`'s API takes them.

    Steps without a body, cut by the capture's size cap, or not chat requests are left out.
    """
    target = wire_api(engine)
    bodies = []
    for step in steps:
        body = step.request_body
        if not body or body.get("truncated") or step.path != CHAT_PATHS.get(step.front):
            continue
        body = _in_api(step.front, body, target)
        if engine.merge_system_messages and isinstance(body.get("messages"), list):
            body = body | {"messages": merge_system(body["messages"])}
        bodies.append(body)
    return bodies


def _in_api(front: str, body: dict[str, Any], target: str) -> dict[str, Any]:
    if front == target:
        return body
    if front == "ollama":
        return ollama_to_openai(CHAT_PATHS[front], body).body
    return openai_to_ollama(CHAT_PATHS[front], body).body
