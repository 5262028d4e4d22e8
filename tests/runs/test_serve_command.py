"""`manage.py serve`'s choice of the machines whose workers it starts (SPARKDASH_SERVE_WORKERS)."""
from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from runs.management.commands.serve import served_here
from tests.factories import MachineFactory, TeamFactory

pytestmark = pytest.mark.django_db


def test_it_serves_every_machine_by_default_and_none_when_told():
    boxes = {MachineFactory(name="box-a"), MachineFactory(name="box-b")}
    assert set(served_here("all")) == boxes
    assert served_here("none") == []


def test_it_serves_only_the_named_machines():
    MachineFactory(name="spark-remote")
    local = MachineFactory(name="dash-box")
    assert served_here(" dash-box ") == [local]


def test_it_refuses_a_name_no_machine_has():
    MachineFactory(name="dash-box")
    with pytest.raises(CommandError, match="unknown machines: spark-9"):
        served_here("dash-box,spark-9")


def test_it_asks_for_the_queue_of_a_name_two_teams_use():
    MachineFactory(name="spark-1")
    lab = MachineFactory(name="spark-1", team=TeamFactory(name="lab"))
    asked = rf"'spark-1': name the one this box serves by its queue \(spark-1, team-{lab.team_id}.spark-1\)"
    with pytest.raises(CommandError, match=asked):
        served_here("spark-1")
    assert served_here(f"team-{lab.team_id}.spark-1") == [lab]
