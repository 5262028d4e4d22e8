"""`manage.py relaytoken --machine NAME [--team TEAM] --name NAME [--revoke | --list]`: a machine's
relay tokens, for headless setup (the web page is the machine's Traffic page, Relay tokens).

Issuing prints the plain token once, alone on stdout (``TOKEN=$(manage.py relaytoken ...)``); it
is stored only as its SHA-256. Each issue and revocation goes into the team's audit log, by
"system" (a shell on the server holds the database anyway).
"""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from engines.machine_names import machine_for_command
from engines.models import Machine
from teams import audit
from traffic.gate import REFRESH_S
from traffic.models import RelayToken

VIA = "manage.py relaytoken"


class Command(BaseCommand):
    """Issue, revoke or list one machine's relay tokens."""

    help = (
        "Issue a relay token for a machine (printed once: the relay takes only requests that present "
        "one, as 'Authorization: Bearer <token>'), revoke the live tokens of a name (--revoke), or "
        "list them (--list)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--machine", required=True, help="the machine's name in the dashboard")
        parser.add_argument("--team", help="the machine's team (needed when several teams use the name)")
        parser.add_argument("--name", help="the token's name: who or what uses it (e.g. 'agents on spark-1')")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--revoke", action="store_true", help="revoke its live tokens named --name")
        action.add_argument("--list", action="store_true", help="list its tokens (names and dates only)")

    def handle(self, *args: Any, **options: Any) -> None:
        machine = machine_for_command(options["machine"], options["team"])
        if options["list"]:
            return self._list(machine)
        name = (options["name"] or "").strip()
        if not name:
            raise CommandError("--name is required to issue or revoke a token")
        if options["revoke"]:
            return self._revoke(machine, name)
        return self._issue(machine, name)

    def _issue(self, machine: Machine, name: str) -> None:
        if RelayToken.objects.filter(machine=machine, name=name, revoked__isnull=True).exists():
            raise CommandError(f"machine {machine.name} already has a live relay token named {name!r}: "
                               "revoke it first (--revoke) or choose another name")
        with transaction.atomic():
            token, plain = RelayToken.issue_for(machine, name)
            audit.record(None, "created", token, machine.team, via=VIA, machine=machine.name)
        self.stderr.write(f"relay token {name!r} for machine {machine.name}: shown once, store it now. "
                          "Clients send it as 'Authorization: Bearer <token>'.")
        self.stdout.write(plain)

    def _revoke(self, machine: Machine, name: str) -> None:
        tokens = list(RelayToken.objects.filter(machine=machine, name=name, revoked__isnull=True))
        if not tokens:
            raise CommandError(f"machine {machine.name} has no live relay token named {name!r}")
        with transaction.atomic():
            for token in tokens:
                token.revoke()
                audit.record(None, "revoked", token, machine.team, via=VIA, machine=machine.name)
        self.stdout.write(f"revoked relay token {name!r} of machine {machine.name}: "
                          f"a running relay refuses it within {REFRESH_S:g} s")

    def _list(self, machine: Machine) -> None:
        for token in RelayToken.objects.filter(machine=machine):
            state = f"revoked {token.revoked:%Y-%m-%d %H:%M}" if token.revoked else "live"
            used = f"last used {token.last_used:%Y-%m-%d %H:%M}" if token.last_used else "never used"
            self.stdout.write(f"{token.name}\tcreated {token.created:%Y-%m-%d %H:%M}\t{used}\t{state}")
