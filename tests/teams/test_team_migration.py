"""teams/migrations/0002 (with engines 0018, runs 0021, traffic 0004): Team moves from engines to
teams in Django's state only, so every team, member, role, audit event, machine and token keeps
its row and id, forward and back."""
from __future__ import annotations

from typing import Any

import pytest

from tests.engines.test_default_team_migration import executor_leaf, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("teams", "0001_roles_and_audit"), ("engines", "0017_config_archived"),
          ("runs", "0020_alerts_of_imported_runs"), ("traffic", "0003_relay_token"),
          ("contenttypes", "0002_remove_content_type_name")]


def _populate(apps: Any) -> None:
    User = apps.get_model("auth", "User")
    Team, Machine = apps.get_model("engines", "Team"), apps.get_model("engines", "Machine")
    TeamRole, AuditEvent = apps.get_model("teams", "TeamRole"), apps.get_model("teams", "AuditEvent")
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    for name, users in (("default", [ann, bob]), ("lab", [ann]), ("ops", [bob])):
        team = Team.objects.create(name=name)
        team.members.add(*users)
        TeamRole.objects.create(team=team, user=users[0], role="admin")
        Machine.objects.create(name=f"{name}-box", team=team, bandwidth_gbps=273, memory_gb=121)
        AuditEvent.objects.create(team=team, team_name=name, actor=users[0], actor_name=users[0].username,
                                  action="created", object_type="machine", object_name=f"{name}-box")
    AuditEvent.objects.create(team=None, actor_name="system", action="started", object_type="run")
    apps.get_model("runs", "MetricsToken").objects.create(team=Team.objects.get(name="lab"), name="m",
                                                          digest="a" * 64)
    ops = Team.objects.get(name="ops")
    apps.get_model("traffic", "RelayToken").objects.create(team=ops, machine=ops.machines.get(), name="r",
                                                           digest="b" * 64)


def _rows(apps: Any, team_app: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the move must keep, with its id and the team it points at (read through the
    model of the state, so the foreign keys are followed as that state says)."""
    Team = apps.get_model(team_app, "Team")
    machines = apps.get_model("engines", "Machine").objects.order_by("pk")
    return {
        "teams": list(Team.objects.order_by("pk").values_list("pk", "name")),
        "members": sorted((team.pk, user) for team in Team.objects.all()
                          for user in team.members.values_list("pk", flat=True)),
        "roles": list(apps.get_model("teams", "TeamRole").objects.order_by("pk")
                      .values_list("pk", "team__name", "user__username", "role")),
        "events": list(apps.get_model("teams", "AuditEvent").objects.order_by("pk")
                       .values_list("pk", "team__name", "team_name", "actor__username", "action")),
        "machines": [(m.pk, m.name, m.team.pk, m.team.name) for m in machines],
        "tokens": [*apps.get_model("runs", "MetricsToken").objects.values_list("pk", "team__name"),
                   *apps.get_model("traffic", "RelayToken").objects.values_list("pk", "team__name")],
    }


def test_it_keeps_every_team_role_event_and_machine_with_its_id_forward_and_back():
    apps = migrate(BEFORE)
    try:
        _populate(apps)
        before = _rows(apps, "engines")
        assert len(before["teams"]) == 3 and len(before["events"]) == 4 and len(before["members"]) == 4
        apps = migrate(executor_leaf())
        assert _rows(apps, "teams") == before
        new = apps.get_model("teams", "Team").objects.create(name="new")  # the id sequence goes on
        assert new.pk > max(pk for pk, _name in before["teams"])
        new.delete()
        apps = migrate(BEFORE)
        assert _rows(apps, "engines") == before
    finally:
        migrate(executor_leaf())


def test_it_moves_the_teams_content_type_with_its_id_forward_and_back():
    apps = migrate(BEFORE)
    try:
        types = apps.get_model("contenttypes", "ContentType").objects
        types.filter(model="team").delete()
        kept = types.create(app_label="engines", model="team").pk
        apps = migrate(executor_leaf())
        types = apps.get_model("contenttypes", "ContentType").objects
        assert list(types.filter(model="team").values_list("pk", "app_label")) == [(kept, "teams")]
        apps = migrate(BEFORE)
        types = apps.get_model("contenttypes", "ContentType").objects
        assert list(types.filter(model="team").values_list("pk", "app_label")) == [(kept, "engines")]
    finally:
        migrate(executor_leaf())
