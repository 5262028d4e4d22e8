"""Roles on the config pages (engines/views.py): a viewer saves and creates nothing, a member's
saves are in the audit log with the changed fields."""

from __future__ import annotations

import pytest
from django.urls import reverse

from engines.models import EngineConfig
from teams.models import AuditEvent, Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory
from tests.teams.people import person

pytestmark = pytest.mark.django_db


def _form_data(config: EngineConfig, **changes: object) -> dict[str, object]:
    data = {
        "name": config.name, "engine": config.engine.pk, "model": config.model,
        "quantization": config.quantization, "lookahead": config.lookahead, "prefix_caching": "unknown",
        "temperature": "0", "seed": "0", "max_tokens": "256",
    }
    return data | changes


def test_it_refuses_a_viewer_saving_or_creating_a_config(alpha):
    client = logged_in(person(alpha.team, Role.VIEWER, "alpha_viewer"))
    edit = reverse("engines:config-edit", args=[alpha.config.pk])
    before = EngineConfig.objects.count()
    assert client.post(edit, _form_data(alpha.config, lookahead=9, notes="mine")).status_code == 403
    create = reverse("engines:config-create")
    assert client.post(create, _form_data(alpha.config, name="alpha-new")).status_code == 403
    matrix = reverse("engines:config-matrix", args=[alpha.config.pk])
    assert client.post(matrix, {"lookaheads": "2,6", "action": "create"}).status_code == 403
    assert client.get(edit).status_code == 403
    alpha.config.refresh_from_db()
    assert EngineConfig.objects.count() == before and alpha.config.notes != "mine"
    assert not AuditEvent.objects.exists()
    html = client.get(reverse("runs:config-list")).content.decode()
    assert alpha.config.name in html and reverse("engines:config-create") not in html


def test_it_offers_a_new_config_only_the_engines_of_teams_where_the_user_is_a_member(alpha, bravo):
    both = person(alpha.team, Role.VIEWER, "split")
    bravo.team.members.add(both)
    form = logged_in(both).get(reverse("engines:config-create")).context["form"]
    assert list(form.fields["engine"].queryset) == [bravo.engine]
    response = logged_in(both).post(reverse("engines:config-create"), _form_data(alpha.config, name="sneaky"))
    assert response.status_code == 400 and "engine" in response.context["form"].errors
    assert not EngineConfig.objects.filter(name="sneaky").exists()


def test_it_records_who_created_and_changed_a_config_and_which_fields(alpha):
    client = logged_in(alpha.teammate)
    data = _form_data(alpha.config, name="alpha-made")
    client.post(reverse("engines:config-create"), data, REMOTE_ADDR="10.8.8.8")
    made = EngineConfig.objects.get(name="alpha-made")
    client.post(reverse("engines:config-edit", args=[made.pk]), _form_data(made, lookahead=7, notes="tuned"))
    events = AuditEvent.objects.order_by("id")
    assert [(e.actor, e.action, e.object_type, e.object_id, e.team) for e in events] == [
        (alpha.teammate, "created", "engineconfig", str(made.pk), alpha.team),
        (alpha.teammate, "changed", "engineconfig", str(made.pk), alpha.team)]
    assert events[0].address == "10.8.8.8" and sorted(events[1].detail["fields"]) == ["lookahead", "notes"]


def test_it_records_each_config_a_matrix_creates(alpha):
    base = EngineConfigFactory(engine=alpha.engine, name="alpha-base", lookahead=4)
    response = logged_in(alpha.teammate).post(reverse("engines:config-matrix", args=[base.pk]),
                                              {"lookaheads": "2,6", "action": "create"})
    assert response.status_code == 200
    created = response.context["created"]
    assert len(created) == 2
    events = AuditEvent.objects.filter(action="created", object_type="engineconfig")
    assert sorted(e.object_id for e in events) == sorted(str(c.pk) for c in created)
    assert all(e.detail == {"matrix_of": base.pk} for e in events)
