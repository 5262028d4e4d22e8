"""`manage.py metricstoken --team TEAM --name NAME [--revoke]`: issue a team's metrics token, or revoke it.

The token is printed once; only its hash is stored. A scrape of ``/metrics`` with it sees the
team's machines only. Revoking revokes every live token of that name in the team.
"""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.models import MetricsToken
from teams import audit
from teams.models import Team


class Command(BaseCommand):
    help = "Issue (printed once) or revoke a team's bearer token for GET /metrics."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, help="the team's name")
        parser.add_argument("--name", required=True, help="what scrapes with it, e.g. prometheus")
        parser.add_argument("--revoke", action="store_true",
                            help="revoke the team's live tokens of this name")

    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(name=options["team"]).first()
        if team is None:
            raise CommandError(f"no team named {options['team']!r}")
        name = options["name"]
        if options["revoke"]:
            live = list(MetricsToken.objects.filter(team=team, name=name, revoked__isnull=True))
            if not live:
                raise CommandError(f"team {team.name} has no live metrics token named {name!r}")
            for token in live:
                token.revoke()
                audit.record(None, "revoked", token, team, object_type="metrics token")
            self.stdout.write(f"revoked {len(live)} metrics token(s) named {name!r} of team {team.name}")
            return
        issued, plain = MetricsToken.issue(MetricsToken.PREFIX, team=team, name=name)
        audit.record(None, "created", issued, team, object_type="metrics token")
        self.stdout.write(f"metrics token {name!r} of team {team.name} (shown once, keep it now):")
        self.stdout.write(plain)
