"""`manage.py demo`: load the demo machines, simulated engines and configs, and a login to use.

Idempotent. An older demo's configs (sim-lookahead-4, sim-ollama) are removed when no run
used them; otherwise they are kept for their runs, their launch recipe made valid (the old
sim-lookahead-4 asked for draft-simple without a draft model) and their notes saying so.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db.models import ProtectedError

from engines.models import Engine, EngineConfig
from teams.models import Team

OLD_CONFIGS = ("sim-lookahead-4", "sim-ollama")
OLD_NOTE = (
    "an older demo's config, kept for its runs; the demo's configs are sim-moe-mtp8 and sim-27b-q8-la12"
)


def demo_log_path() -> Path:
    """The log file the demo's external simulator (sim-ollama) appends to and the worker tails."""
    return Path(settings.VAR_DIR) / "engine-logs" / "sim-ollama.log"


class Command(BaseCommand):
    help = (
        "Load examples/demo.yaml (the simulator, in the default team) and make sure a user can log "
        "in; the superusers are put in the default team too."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("loadconfigs", settings.BASE_DIR / "examples" / "demo.yaml", stdout=self.stdout)
        # The demo's names are the default team's (names are unique per team, not across teams).
        demo = Engine.objects.filter(machine__team=Team.default(), simulator=True)
        demo.filter(name="sim-ollama").update(log_path=str(demo_log_path()))
        self._retire_old_configs()
        self._login()

    def _retire_old_configs(self) -> None:
        for name in OLD_CONFIGS:
            config = EngineConfig.objects.filter(name=name, engine__simulator=True,
                                                 engine__machine__team=Team.default()).first()
            if config is None:
                continue
            try:
                config.delete()
                self.stdout.write(f"removed the older demo's config {name} (no run used it)")
            except ProtectedError:
                method = config.speculative_method
                if method == "draft-simple" and not config.draft_model:
                    method = "draft-mtp"
                EngineConfig.objects.filter(pk=config.pk).update(speculative_method=method, notes=OLD_NOTE)
                self.stdout.write(f"kept the older demo's config {name} for its runs")

    def _login(self) -> None:
        users = get_user_model().objects
        team = Team.default()
        if users.filter(is_superuser=True).exists():
            team.members.add(*users.filter(is_superuser=True))
            self.stdout.write("log in with your existing superuser (manage.py changepassword NAME resets it)")
            return
        username = os.getenv("DJANGO_SUPERUSER_USERNAME", "admin")
        password = os.getenv("DJANGO_SUPERUSER_PASSWORD") or secrets.token_urlsafe(12)
        email = os.getenv("DJANGO_SUPERUSER_EMAIL", "")
        try:  # the password rules (AUTH_PASSWORD_VALIDATORS) hold for the demo's login too
            validate_password(password, users.model(username=username, email=email))
        except ValidationError as refused:
            raise CommandError(f"DJANGO_SUPERUSER_PASSWORD refused: {' '.join(refused.messages)}") from None
        user = users.create_superuser(username, email, password)
        team.members.add(user)
        self.stdout.write(f"created user {username!r} with password {password!r}: log in with these")
