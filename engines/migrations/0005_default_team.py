"""Existing installs keep working: a "default" team holds every user and machine.

Each machine's host is taken from its engines' URLs (the first one that is not loopback), so
the engines already registered pass Engine.clean's check that they point at their machine.
"""
from urllib.parse import urlsplit

from django.conf import settings
from django.db import migrations

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _host(machine) -> str:
    for engine in machine.engines.order_by("pk"):
        host = (urlsplit(engine.base_url).hostname or "").lower()
        if host and host not in LOOPBACK:
            return host
    return ""


def forwards(apps, schema_editor):
    Machine = apps.get_model("engines", "Machine")
    Team = apps.get_model("engines", "Team")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    if not Machine.objects.exists() and not User.objects.exists():
        return  # a fresh database: teams are made when users and machines are
    team, _ = Team.objects.get_or_create(name="default")
    team.members.add(*User.objects.all())
    for machine in Machine.objects.filter(team__isnull=True):
        machine.team = team
        machine.host = machine.host or _host(machine)
        machine.save(update_fields=["team", "host"])


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('engines', '0004_team'),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
