"""`manage.py relay --machine NAME [--team TEAM]`: the recording relay in front of the machine's
current engine.

Without a live relay token for the machine it listens on 127.0.0.1 only and forwards without the
engine's stored API key; with one, it listens on the machine's host (or --host) and takes only
requests that present a token (traffic.gate).
"""
from __future__ import annotations

import signal
import sys
from argparse import ArgumentTypeError
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.clients.lines import MIB
from engines.machine_names import machine_for_command
from engines.models import Machine
from traffic.gate import is_loopback
from traffic.models import RelayToken
from traffic.relay.upstream import Limits
from traffic.service import Listen, RelayService
from traffic.upstream import RelaySetupError

LOOPBACK = "127.0.0.1"


class Command(BaseCommand):
    """Serve the Ollama-API and OpenAI-API fronts, forwarding to the machine's engine, recording it all."""

    help = (
        "Run the recording relay of one machine: an Ollama-API front and an OpenAI-API front that "
        "forward to the machine's current engine and record every request (Traffic page). While it "
        "runs, runs on the machine are refused (one engine per machine)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--machine", required=True, help="the machine's name in the dashboard")
        parser.add_argument("--team", help="the machine's team (needed when several teams use the name)")
        parser.add_argument(
            "--host", help="the address to listen on (default: the machine's host once it has a relay "
            "token, else 127.0.0.1; an address other than loopback needs a token)",
        )
        parser.add_argument("--ollama-port", type=int, default=11434, help="the Ollama-API front's port")
        parser.add_argument("--openai-port", type=int, default=8090, help="the OpenAI-API front's port")
        parser.add_argument(
            "--engine", help="the engine to forward to (default: the machine's only engine, else the one "
            "its latest run started)",
        )
        defaults = Limits()
        parser.add_argument("--max-body-mb", type=_mib, default=defaults.max_body // MIB,
                            help="the largest request body taken, in MiB (a larger one gets 413)")
        parser.add_argument("--max-line-mb", type=_mib, default=defaults.max_line // MIB,
                            help="the longest line of a streamed answer from the engine, in MiB")

    def handle(self, *args: Any, **options: Any) -> None:
        machine = machine_for_command(options["machine"], options["team"])
        listen = Listen(self._host(machine, options["host"]), options["ollama_port"], options["openai_port"])
        limits = Limits(max_body=options["max_body_mb"] * MIB, max_line=options["max_line_mb"] * MIB)
        if listen.ollama_port == listen.openai_port != 0:
            raise CommandError(f"--ollama-port and --openai-port must differ (both {listen.ollama_port})")
        # docker stop sends SIGTERM: leave through the same path as Ctrl-C, storing what is left.
        # The old handler comes back after, for a caller that runs the command in its own process.
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            relay = RelayService(machine, listen, options["engine"], limits)
            upstream = relay.upstream()
            target = f"{upstream.engine_kind} at {upstream.base_url}"
            relay.run(lambda addresses: self._ready(machine.name, addresses, target, relay.gate.live))
        except RelaySetupError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            self.stdout.write("relay stopped")
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _host(self, machine: Machine, asked: str | None) -> str:
        """--host, else the machine's host once it has a live token, else loopback (said so)."""
        if asked:
            return asked
        host = machine.host or LOOPBACK
        if is_loopback(host) or RelayToken.objects.filter(machine=machine, revoked__isnull=True).exists():
            return host
        self.stdout.write(
            f"machine {machine.name} has no relay token: listening on {LOOPBACK} only, not on its host "
            f"{machine.host} (a team admin issues one on its Traffic page, or with manage.py relaytoken)"
        )
        return LOOPBACK

    def _ready(self, machine: str, addresses: dict[str, str], target: str, live_tokens: int) -> None:
        access = (
            f"requests must present one of its {live_tokens} relay token(s)" if live_tokens else
            "open on loopback: no relay token issued, so requests go on without the engine's stored API key"
        )  # fmt: skip
        self.stdout.write(
            f"relay for {machine}: Ollama API on {addresses['ollama']}, OpenAI API on {addresses['openai']}"
            f" -> {target}; {access}"
        )
        self.stdout.flush()


def _mib(text: str) -> int:
    """A size option: a whole number of MiB, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ArgumentTypeError(f"must be a whole number of MiB, at least 1 (not {text!r})")
    return value
