"""Clearing a machine's measured bandwidth: a team admin's action, in the audit log."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from engines.models import Machine
from teams.models import AuditEvent, Role
from teams.roles import set_role

pytestmark = pytest.mark.django_db


def measured(machine: Machine) -> Machine:
    Machine.objects.filter(pk=machine.pk).update(measured_bandwidth_gbps=20.4, bandwidth_method="cpu copy",
                                                 bandwidth_run_id=7)
    return machine


def test_it_clears_the_measured_bandwidth_for_a_team_admin(alpha):
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    client = Client()
    client.force_login(alpha.owner)
    machine = measured(alpha.machine)
    page = client.get(alpha.config.get_absolute_url()).content.decode()
    assert 'id="clear-bandwidth"' in page
    url = reverse("engines:machine-bandwidth-clear", args=[machine.pk])
    response = client.post(url, {"next": alpha.config.get_absolute_url()})
    assert response.status_code == 302 and response.url == alpha.config.get_absolute_url()
    machine.refresh_from_db()
    assert machine.measured_bandwidth_gbps is None and machine.bandwidth_run_id is None
    assert AuditEvent.objects.filter(action="changed", object_id=str(machine.pk)).exists()


def test_it_refuses_a_member_and_a_stranger(alpha, bravo):
    machine = measured(alpha.machine)
    url = reverse("engines:machine-bandwidth-clear", args=[machine.pk])
    for user, status in ((alpha.teammate, 403), (bravo.owner, 404)):
        client = Client()
        client.force_login(user)
        assert client.post(url).status_code == status
    machine.refresh_from_db()
    assert machine.measured_bandwidth_gbps == 20.4


def test_it_goes_home_rather_than_to_another_site_after_clearing(alpha):
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    client = Client()
    client.force_login(alpha.owner)
    url = reverse("engines:machine-bandwidth-clear", args=[measured(alpha.machine).pk])
    for elsewhere in ("//evil.example/", "/\\evil.example/", "https://evil.example/"):
        assert client.post(url, {"next": elsewhere}).url == reverse("runs:home")
