"""The Django admin's machine form (engines/admin.py): names unique per team, as on the team page."""
from __future__ import annotations

import pytest
from django.urls import reverse

from engines.models import Machine
from tests.access_walk import logged_in
from tests.factories import MachineFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_takes_a_name_of_another_team_and_refuses_the_own_teams_in_the_admin():
    root = UserFactory(username="root", is_superuser=True, is_staff=True, teams=[])
    lab, ops = TeamFactory(name="lab"), TeamFactory(name="ops")
    MachineFactory(name="box", team=lab)
    client = logged_in(root)
    add = reverse("admin:engines_machine_add")
    data = {"name": "box", "host": "", "bandwidth_gbps": "273", "memory_gb": "128", "notes": ""}
    assert client.post(add, data | {"team": ops.pk}).status_code == 302
    refused = client.post(add, data | {"team": lab.pk, "notes": "second"})
    html = refused.content.decode()
    assert refused.status_code == 200 and "a machine named box already exists in team lab" in html
    assert sorted(Machine.objects.filter(name="box").values_list("team__name", flat=True)) == ["lab", "ops"]
    assert not Machine.objects.filter(notes="second").exists()
