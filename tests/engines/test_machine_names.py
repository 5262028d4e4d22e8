"""Finding a machine by name for an operator's command (engines/machine_names.py)."""
from __future__ import annotations

import pytest

from engines.machine_names import AmbiguousMachine, MachineLookupError, find_machine
from tests.factories import MachineFactory, TeamFactory

pytestmark = pytest.mark.django_db


def test_it_finds_a_name_one_team_uses_and_asks_for_the_team_when_two_do():
    lab = MachineFactory(name="spark-1", team=TeamFactory(name="lab"))
    assert find_machine("spark-1") == lab
    default = MachineFactory(name="spark-1")
    with pytest.raises(AmbiguousMachine, match=r"'spark-1' is used by more than one team \(default, lab\): "
                                               "choose the team with --team NAME"):
        find_machine("spark-1")
    assert (find_machine("spark-1", "lab"), find_machine("spark-1", "default")) == (lab, default)


def test_it_finds_a_machine_by_its_queue_when_asked():
    lab = MachineFactory(name="Spark 1", team=TeamFactory(name="lab"))
    assert find_machine(f"team-{lab.team_id}.spark-1", queue_slug=True) == lab
    with pytest.raises(MachineLookupError, match=f"no machine named 'team-{lab.team_id}.spark-1'"):
        find_machine(f"team-{lab.team_id}.spark-1")


def test_it_says_which_team_or_machine_it_does_not_know():
    MachineFactory(name="spark-1", team=TeamFactory(name="lab"))
    with pytest.raises(MachineLookupError, match=r"no team named 'ops' \(teams: lab\)"):
        find_machine("spark-1", "ops")
    with pytest.raises(MachineLookupError, match="no machine named 'spark-2' in team lab"):
        find_machine("spark-2", "lab")
