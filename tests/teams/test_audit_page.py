"""The audit log page (teams/audit_page.py): team admins only, newest first, filters, CSV as text."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from teams.audit import record
from teams.models import Role
from teams.roles import set_role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def formula_config(team, admin):
    """A config named like a spreadsheet formula, created through the config form (audited)."""
    engine = EngineFactory(machine=MachineFactory(team=team))
    base = EngineConfigFactory(engine=engine, name="plain")
    form = reverse("engines:config-edit", args=[base.pk])
    page = logged_in(admin).get(form)
    assert page.status_code == 200
    posted = {name: value for name, value in page.context["form"].initial.items() if value is not None}
    posted |= {"name": "=1+1", "engine": engine.pk}
    assert logged_in(admin).post(form, posted).status_code == 302
    return base


def test_it_writes_a_formula_looking_name_as_text_in_the_csv(team, admin, formula_config):
    response = logged_in(admin).get(reverse("teams:audit", args=[team.pk]) + "?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["object"] for row in rows] == ["'=1+1"]
    assert rows[0]["person"] == "ada" and rows[0]["action"] == "changed"
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())


def test_it_is_for_the_teams_admins_only(team, admin, formula_config):
    url = reverse("teams:audit", args=[team.pk])
    member = UserFactory(username="max", teams=[team])
    viewer = UserFactory(username="vic", teams=[])
    set_role(viewer, team, Role.VIEWER)
    stranger = UserFactory(username="sam", teams=[TeamFactory(name="other")])
    assert logged_in(member).get(url).status_code == 403
    assert logged_in(viewer).get(url + "?format=csv").status_code == 403
    assert logged_in(stranger).get(url).status_code == 404
    page = logged_in(admin).get(url)
    assert page.status_code == 200 and "=1+1" in page.content.decode()


def test_it_lists_the_newest_first_and_filters_by_action_type_and_person(team, admin):
    config = EngineConfigFactory(engine=EngineFactory(machine=MachineFactory(team=team)), name="cfg")
    bob = UserFactory(username="bob", teams=[team])
    record(admin, "created", config, team)
    record(bob, "changed", config, team, fields=["lookahead"])
    record(bob, "added", bob, team, object_type="member")
    client = logged_in(admin)
    url = reverse("teams:audit", args=[team.pk])

    def actions(query: str = "") -> list[str]:
        return [event.action for event in client.get(url + query).context["page"].object_list]

    assert actions() == ["added", "changed", "created"]
    assert actions("?person=bob") == ["added", "changed"]
    assert actions("?action=created") == ["created"]
    assert actions("?object_type=member") == ["added"]


def test_it_shows_no_other_teams_events(team, admin):
    other = TeamFactory(name="other")
    record(admin, "created", EngineConfigFactory(engine=EngineFactory(machine=MachineFactory(team=other)),
                                                 name="theirs"), other)
    html = logged_in(admin).get(reverse("teams:audit", args=[team.pk])).content.decode()
    assert "theirs" not in html
