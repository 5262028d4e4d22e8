import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from engines.access import visible
from engines.models import DEFAULT_TEAM, EngineConfig, Machine
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_it_puts_the_demo_user_and_machine_in_the_default_team(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "demo")
    call_command("demo")
    user = get_user_model().objects.get(username="demo")
    machine = Machine.objects.get(name="demo-box")
    assert machine.team.name == DEFAULT_TEAM
    assert list(user.teams.values_list("name", flat=True)) == [DEFAULT_TEAM]
    teammate = UserFactory(username="guest")  # a user of the default team, not a superuser
    assert visible(teammate, EngineConfig).filter(engine__machine=machine).count() == 2


def test_it_adds_an_existing_superuser_to_the_default_team():
    root = UserFactory(username="root", is_superuser=True, teams=[])
    call_command("demo")
    assert list(root.teams.values_list("name", flat=True)) == [DEFAULT_TEAM]
