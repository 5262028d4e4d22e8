"""`manage.py relay --machine NAME`: the recording relay in front of the machine's current engine."""
from __future__ import annotations

import signal
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.models import Machine
from traffic.service import Listen, RelayService
from traffic.upstream import RelaySetupError


class Command(BaseCommand):
    """Serve the Ollama-API and OpenAI-API fronts, forwarding to the machine's engine, recording it all."""

    help = (
        "Run the recording relay of one machine: an Ollama-API front and an OpenAI-API front that "
        "forward to the machine's current engine and record every request (Traffic page). While it "
        "runs, runs on the machine are refused (one engine per machine)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--machine", required=True, help="the machine's name in the dashboard")
        parser.add_argument(
            "--host", help="the address to listen on (default: the machine's host, else 127.0.0.1)"
        )
        parser.add_argument("--ollama-port", type=int, default=11434, help="the Ollama-API front's port")
        parser.add_argument("--openai-port", type=int, default=8090, help="the OpenAI-API front's port")
        parser.add_argument(
            "--engine", help="the engine to forward to (default: the machine's only engine, else the one "
            "its latest run started)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        machine = Machine.objects.filter(name=options["machine"]).first()
        if machine is None:
            known = ", ".join(Machine.objects.values_list("name", flat=True)) or "none yet"
            raise CommandError(f"no machine named {options['machine']!r} (machines: {known})")
        host = options["host"] or machine.host or "127.0.0.1"
        listen = Listen(host, options["ollama_port"], options["openai_port"])
        if listen.ollama_port == listen.openai_port != 0:
            raise CommandError(f"--ollama-port and --openai-port must differ (both {listen.ollama_port})")
        # docker stop sends SIGTERM: leave through the same path as Ctrl-C, storing what is left.
        # The old handler comes back after, for a caller that runs the command in its own process.
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            relay = RelayService(machine, listen, options["engine"])
            upstream = relay.upstream()
            target = f"{upstream.engine_kind} at {upstream.base_url}"
            relay.run(lambda addresses: self._ready(machine.name, addresses, target))
        except RelaySetupError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            self.stdout.write("relay stopped")
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _ready(self, machine: str, addresses: dict[str, str], target: str) -> None:
        self.stdout.write(
            f"relay for {machine}: Ollama API on {addresses['ollama']}, OpenAI API on {addresses['openai']}"
            f" -> {target}"
        )
        self.stdout.flush()
