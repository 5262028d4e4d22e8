"""One machine's relay as a process: its engine followed, its writer, its heartbeat, its fronts served.

`manage.py relay` builds a `RelayService` and calls `run()`. The relay's app (traffic.relay) asks
`upstream()` for every request: the answer comes from memory, refreshed by each heartbeat. It asks
the gate (traffic.gate) about each request's relay token, also from memory, refreshed every
REFRESH_S seconds. Without a live token for the machine the relay may listen on loopback only.
"""
from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from engines.models import Machine
from runs.models import Run
from traffic import heartbeat
from traffic.engine_log import EngineLogWatch
from traffic.gate import REFRESH_S, TokenGate, is_loopback
from traffic.relay.app import RelayApp, build_relay
from traffic.relay.server import bind, serve_forever, url_of
from traffic.relay.upstream import Limits, Upstream
from traffic.upstream import RelaySetupError, resolve_engine, upstream_for
from traffic.writer import RecordWriter, WriterCounters

log = logging.getLogger(__name__)
CLOSE_TIMEOUT_S = 30.0  # how long a stopping relay waits for the database to take what is left


@dataclass(frozen=True)
class Listen:
    """Where the relay's two fronts listen."""

    host: str
    ollama_port: int
    openai_port: int

    def addresses(self) -> dict[str, str]:
        """The fronts' base URLs, as the machine's relay state shows them."""
        where = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address
        return {"ollama": f"http://{where}:{self.ollama_port}", "openai": f"http://{where}:{self.openai_port}"}


class RelayService:
    """The relay of one machine: resolves its engine now (RelaySetupError says why it cannot, or
    that it may not listen on `listen.host` without a relay token)."""

    def __init__(self, machine: Machine, listen: Listen, engine_name: str | None = None,
                 limits: Limits | None = None) -> None:  # fmt: skip
        self.machine, self.listen, self.engine_name = machine, listen, engine_name
        self.limits = limits or Limits()
        self.gate = TokenGate(machine.pk, open_when_none=is_loopback(listen.host))
        if not self.gate.open_when_none and not self.gate.live:
            raise RelaySetupError(no_token_refusal(machine, listen.host))
        self.started: datetime = timezone.now()
        self.engine_id: int | None = None
        self.engine_log = EngineLogWatch()
        self._upstream: Upstream = self._resolve()
        self.writer: RecordWriter | None = None
        self.addresses = listen.addresses()  # the bound ones once serving

    def upstream(self) -> Upstream:
        """The engine to forward the next request to (from memory: never waits on the database)."""
        return self._upstream

    def follow(self) -> None:
        """Ask again which engine is current (a heartbeat's work); a failure keeps the last one."""
        try:
            self._upstream = self._resolve()
        except RelaySetupError as exc:
            log.warning("relay keeps forwarding to %s: %s", self._upstream.base_url, exc)

    def tick(self) -> None:
        """One heartbeat: follow the engine, then mark the relay active and store its state."""
        self.follow()
        heartbeat.beat(self.machine.pk, self.status())

    def status(self) -> heartbeat.RelayStatus:
        """What the heartbeat stores now."""
        counters = self.writer.counters() if self.writer else WriterCounters(0, 0, 0, 0, "")
        lines = tuple(self.engine_log.cache_discards())
        return heartbeat.RelayStatus(self.started, self.addresses, self._upstream.base_url, counters, lines)

    def claim_machine(self) -> None:
        """Mark the relay active, then refuse to start if a run already uses the machine's engine.

        In this order, no run slips between: a worker claims a run with the machine's row locked
        and reads the mark there, so a run claimed after the mark is refused, one before is seen.
        """
        heartbeat.beat(self.machine.pk, self.status())
        running = Run.objects.filter(machine=self.machine, status=Run.Status.RUNNING).first()
        if running is not None:
            heartbeat.clear(self.machine.pk)
            raise RelaySetupError(
                f"machine {self.machine.name} is running run {running.pk} ({running.job}): "
                "start its relay when the run has ended (one engine per machine)"
            )

    def run(self, on_ready: Callable[[dict[str, str]], None] = lambda addresses: None) -> None:
        """Listen, mark the machine, serve until SIGINT or SIGTERM; then store what is left and clear
        the mark. `on_ready` gets the fronts' addresses (the real ports where 0 was asked for)."""
        sockets = _listen(self.listen)
        self.addresses = {"ollama": url_of(sockets[0]), "openai": url_of(sockets[1])}
        try:
            self.claim_machine()
        except RelaySetupError:
            for sock in sockets:
                sock.close()
            raise
        self.writer = RecordWriter(self.machine, engine_id=lambda: self.engine_id)
        beats = heartbeat.Heartbeat(self.tick, settings.SPARKDASH_RELAY_ACTIVE_S / 3)
        tokens = heartbeat.Heartbeat(self.gate.refresh, REFRESH_S, "relay token refresh")
        beats.start()
        tokens.start()
        on_ready(self.addresses)
        try:
            serve_forever(self.app(), sockets)
        finally:
            tokens.stop()
            beats.stop()
            self._let_go()

    def app(self) -> RelayApp:
        """The relay's app: one for both fronts (it tells them by path), its records to the writer."""
        assert self.writer is not None
        return build_relay(self.upstream, self.writer.put, self.gate, self.limits)

    def _let_go(self) -> None:
        assert self.writer is not None
        if not self.writer.close(CLOSE_TIMEOUT_S):
            log.error("relay stopped with %d traffic records unstored", self.writer.counters().buffered)
        try:
            heartbeat.clear(self.machine.pk)
        except DatabaseError as exc:  # the mark expires by itself after SPARKDASH_RELAY_ACTIVE_S
            log.warning("relay mark of machine %s not cleared: %s", self.machine.name, exc)
        try:
            self.gate.refresh()  # stores when the tokens used since the last refresh were used
        except DatabaseError as exc:
            log.warning("relay tokens' last use not stored: %s", exc)

    def _resolve(self) -> Upstream:
        self.machine.refresh_from_db(fields=["host", "capture_bodies", "name"])
        engine = resolve_engine(self.machine, self.engine_name)
        spec = upstream_for(engine)
        self.engine_id = engine.pk
        self.engine_log.follow(engine.log_path)
        return spec


def no_token_refusal(machine: Machine, host: str) -> str:
    """Why the relay may not listen on `host`: the machine has no live relay token."""
    return (
        f"machine {machine.name} has no relay token, so its relay listens on loopback only (127.0.0.1): "
        f"{host} is reachable from other machines. A team admin issues a token on the machine's Traffic "
        f"page (Relay tokens) or with manage.py relaytoken {machine.command_options} --name NAME; then "
        "start the relay again"
    )


def _listen(listen: Listen) -> list[socket.socket]:
    sockets: list[socket.socket] = []
    try:
        for port in (listen.ollama_port, listen.openai_port):
            sockets.append(bind(listen.host, port))
    except OSError as exc:  # the port is taken, or the host is not this box's
        for sock in sockets:
            sock.close()
        raise RelaySetupError(f"cannot listen on {listen.host} port {port}: {exc}") from None
    return sockets
