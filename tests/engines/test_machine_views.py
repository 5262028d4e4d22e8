"""Adding and editing a team's machine (engines/machine_views.py): team admins only, audited, with
names unique per team."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from engines.models import Machine
from teams.models import AuditEvent, Role
from teams.roles import set_role
from tests.access_walk import logged_in
from tests.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db

ADDRESS = "10.1.2.3"
MACHINE = {"name": "lab-box", "host": "10.0.0.9", "bandwidth_gbps": "273", "memory_gb": "128",
           "notes": "rack 2"}


@pytest.fixture
def team():
    return TeamFactory(name="lab")


@pytest.fixture
def admin(team):
    user = UserFactory(username="ada", teams=[])
    set_role(user, team, Role.ADMIN)
    return user


@pytest.fixture
def member(team):
    return UserFactory(username="max", teams=[team])  # no TeamRole row: a member


def test_it_refuses_a_member_adding_a_machine_and_shows_no_form(team, member):
    client = logged_in(member)
    url = reverse("engines:machine-add", args=[team.pk])
    assert client.post(url, MACHINE, REMOTE_ADDR=ADDRESS).status_code == 403
    assert client.get(url).status_code == 403
    assert not Machine.objects.filter(name="lab-box").exists()
    page = client.get(reverse("teams:detail", args=[team.pk])).content.decode()
    assert url not in page and reverse("teams:member-add", args=[team.pk]) not in page
    assert not AuditEvent.objects.exists()


def test_it_lets_an_admin_add_a_machine_to_the_team(team, admin):
    client = logged_in(admin)
    url = reverse("engines:machine-add", args=[team.pk])
    assert client.get(url).status_code == 200
    assert client.post(url, MACHINE, REMOTE_ADDR=ADDRESS).status_code == 302
    machine = Machine.objects.get(name="lab-box")
    assert machine.team == team and machine.host == "10.0.0.9" and machine.memory_gb == 128
    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.object_type, event.object_id, event.address) == (
        admin, "created", "machine", str(machine.pk), ADDRESS)


def test_it_lets_two_teams_each_add_a_machine_of_one_name_with_queues_of_their_own(team, admin):
    other = TeamFactory(name="ops")
    ops_admin = UserFactory(username="oz", teams=[])
    set_role(ops_admin, other, Role.ADMIN)
    for user, its_team in ((admin, team), (ops_admin, other)):
        url = reverse("engines:machine-add", args=[its_team.pk])
        assert logged_in(user).post(url, MACHINE | {"name": "spark-1"}).status_code == 302
    saved = {m.team.name: m for m in Machine.objects.filter(name="spark-1")}
    assert sorted(saved) == ["lab", "ops"]
    assert saved["lab"].queue_name != saved["ops"].queue_name


CSRF_VALUE = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


def test_it_refuses_a_machine_name_taken_in_the_own_team_without_a_word_of_the_other(team, admin):
    other = TeamFactory(name="ops")
    Machine.objects.create(name="spark-1", team=other, bandwidth_gbps=273, memory_gb=128)
    client = logged_in(admin)
    url = reverse("engines:machine-add", args=[team.pk])
    assert client.post(url, MACHINE | {"name": "spark-1"}).status_code == 302  # ops's name: fine
    refusals = {"spark-1": "a machine named spark-1 already exists in team lab",  # the own team's name
                "Spark 1": "Spark 1 would share the worker queue machine.team-"}  # or its queue
    for name, refusal in refusals.items():
        response = client.post(url, MACHINE | {"name": name, "host": "10.0.0.10"})
        html = response.content.decode()
        assert response.status_code == 400 and refusal in html
        # Not a word of the other team; a random CSRF token may hold the letters "ops" (it did once).
        assert "ops" not in CSRF_VALUE.sub("", html)
    assert Machine.objects.filter(team=team).count() == 1
    assert not Machine.objects.filter(host="10.0.0.10").exists()
