"""`manage.py demo`: load the demo machine, simulated engines and configs, and a login to use."""
from __future__ import annotations

import os
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from engines.models import Team


class Command(BaseCommand):
    help = (
        "Load examples/demo.yaml (the simulator, in the default team) and make sure a user can log "
        "in; the superusers are put in the default team too."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("loadconfigs", settings.BASE_DIR / "examples" / "demo.yaml", stdout=self.stdout)
        users = get_user_model().objects
        team = Team.default()
        if users.filter(is_superuser=True).exists():
            team.members.add(*users.filter(is_superuser=True))
            self.stdout.write("log in with your existing superuser (manage.py changepassword NAME resets it)")
            return
        username = os.getenv("DJANGO_SUPERUSER_USERNAME", "admin")
        password = os.getenv("DJANGO_SUPERUSER_PASSWORD") or secrets.token_urlsafe(9)
        user = users.create_superuser(username, os.getenv("DJANGO_SUPERUSER_EMAIL", ""), password)
        team.members.add(user)
        self.stdout.write(f"created user {username!r} with password {password!r}: log in with these")
