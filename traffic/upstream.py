"""Which engine a machine's relay forwards to, and what the relay needs to know about it (its Upstream).

The relay follows the machine's current engine: the one named on the command line, else the
machine's only engine, else the engine its latest run started (its latest engine session).
The relay command asks again at every heartbeat, so a run's new managed engine is followed.
"""
from __future__ import annotations

from typing import Literal

from django.conf import settings

from engines import kinds
from engines.models import Engine, Machine
from traffic.relay.upstream import Upstream


class RelaySetupError(ValueError):
    """The relay cannot tell which engine to forward to, or may not contact it (the message says why)."""


def resolve_engine(machine: Machine, name: str | None = None) -> Engine:
    """The engine machine's relay forwards to (see the module); RelaySetupError when none can be told."""
    engines = list(machine.engines.all())
    if name:
        named = [engine for engine in engines if engine.name == name]
        if not named:
            raise RelaySetupError(f"machine {machine.name} has no engine named {name!r} ({_listed(engines)})")
        return named[0]
    if len(engines) == 1:
        return engines[0]
    session = machine.engine_sessions.select_related("engine").order_by("-started", "-pk").first()
    if session is not None:
        return session.engine
    if not engines:
        raise RelaySetupError(f"machine {machine.name} has no engine: add one, then start its relay")
    raise RelaySetupError(
        f"machine {machine.name} has {len(engines)} engines ({_listed(engines)}) and no run has started "
        "one yet: name the one to relay to with --engine"
    )


def upstream_for(engine: Engine) -> Upstream:
    """What the relay needs to forward to `engine`; RelaySetupError if its URL is off its machine."""
    refusal = engine.url_refusal()
    if refusal:  # the same rule as the worker's: only URLs on the engine's own machine
        raise RelaySetupError(f"engine {engine.name}'s URL {engine.base_url} refused: {refusal}")
    return Upstream(
        base_url=engine.base_url.rstrip("/"),
        api=wire_api(engine),
        api_key=engine.api_key,
        engine_kind=engine.kind,
        merge_system=engine.merge_system_messages,
        capture_bodies=engine.machine.capture_bodies,
        body_cap_bytes=settings.SPARKDASH_TRAFFIC_BODY_CAP_BYTES,
    )


def wire_api(engine: Engine) -> Literal["ollama", "openai"]:
    """The API `engine` speaks: Ollama's own, or the OpenAI-compatible one (llama-server, vLLM, SGLang)."""
    return "ollama" if kinds.get(engine.kind).client == kinds.OLLAMA_NATIVE else "openai"


def _listed(engines: list[Engine]) -> str:
    return "its engines: " + ", ".join(engine.name for engine in engines) if engines else "it has none"
