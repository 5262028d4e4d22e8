"""Django admin saves and deletes in the audit log (teams/admin_audit.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from engines.models import Machine
from teams.models import AuditEvent
from tests.access_walk import logged_in
from tests.factories import EngineFactory, MachineFactory, RunFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def root():
    return UserFactory(username="root", is_superuser=True, is_staff=True, teams=[])


def test_it_records_a_machine_changed_and_deleted_in_the_admin(root):
    team = TeamFactory(name="lab")
    machine = MachineFactory(name="box", team=team, host="10.0.0.1")
    client = logged_in(root)
    data = {"name": "box", "team": team.pk, "host": "10.0.0.2", "bandwidth_gbps": machine.bandwidth_gbps,
            "memory_gb": machine.memory_gb, "notes": ""}
    change = reverse("admin:engines_machine_change", args=[machine.pk])
    response = client.post(change, data, REMOTE_ADDR="10.3.3.3")
    assert response.status_code == 302
    client.post(reverse("admin:engines_machine_delete", args=[machine.pk]), {"post": "yes"})
    assert not Machine.objects.filter(pk=machine.pk).exists()
    events = AuditEvent.objects.order_by("id")
    assert [(e.actor, e.action, e.object_type, e.object_name, e.team_name) for e in events] == [
        (root, "changed", "machine", "box", "lab"), (root, "deleted", "machine", "box", "lab")]
    assert events[0].detail == {"via": "admin", "fields": ["host"]} and events[0].address == "10.3.3.3"


def test_it_names_an_engines_new_api_key_without_its_value(root):
    engine = EngineFactory(api_key="old-secret")
    data = {"machine": engine.machine.pk, "name": engine.name, "kind": engine.kind,
            "base_url": engine.base_url, "api_key": "new-secret-123"}
    response = logged_in(root).post(reverse("admin:engines_engine_change", args=[engine.pk]), data)
    assert response.status_code == 302
    event = AuditEvent.objects.get()
    assert event.action == "changed" and "api_key" in event.detail["fields"]
    assert "new-secret-123" not in str(event.detail) and "old-secret" not in str(event.detail)


def test_it_records_a_run_deleted_in_the_admin(root):
    run = RunFactory()
    response = logged_in(root).post(reverse("admin:runs_run_delete", args=[run.pk]), {"post": "yes"})
    assert response.status_code == 302
    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.object_type, event.object_id, event.team) == (
        root, "deleted", "run", str(run.pk), run.machine.team)
