"""`manage.py relaytoken`: a token printed once and stored as its digest, revoked by name, listed
without the tokens; each issue and revocation in the team's audit log."""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from teams.models import AuditEvent
from teams.tokens import digest
from tests.factories import MachineFactory, TeamFactory
from traffic.models import RelayToken

pytestmark = pytest.mark.django_db


def relaytoken(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("relaytoken", "--machine", "spark-1", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


@pytest.fixture
def machine():
    return MachineFactory(name="spark-1")


def test_it_prints_the_token_alone_once_and_stores_its_digest(machine):
    plain, note = relaytoken("--name", "agents")
    token = RelayToken.objects.get(machine=machine)
    assert plain.startswith("sdr_") and "\n" not in plain and plain not in note
    assert "shown once" in note and "Authorization: Bearer <token>" in note
    assert token.digest == digest(plain) and token.team == machine.team and token.name == "agents"
    listed, _ = relaytoken("--list")
    assert "agents" in listed and "live" in listed and plain not in listed
    event = AuditEvent.objects.get()
    said = (event.action, event.actor_name, event.team, event.object_name)
    assert said == ("created", "system", machine.team, "agents")
    assert plain not in str(event.detail)


def test_it_revokes_the_live_tokens_of_a_name(machine):
    plain, _ = relaytoken("--name", "agents")
    kept, _ = relaytoken("--name", "ci")
    said, _ = relaytoken("--name", "agents", "--revoke")
    assert "revoked relay token 'agents'" in said and "within 5 s" in said
    assert RelayToken.live(plain) is None and RelayToken.live(kept) is not None
    assert list(AuditEvent.objects.values_list("action", "object_name").order_by("at", "pk")) == [
        ("created", "agents"), ("created", "ci"), ("revoked", "agents")]
    with pytest.raises(CommandError, match="has no live relay token named 'agents'"):
        relaytoken("--name", "agents", "--revoke")


def test_it_refuses_a_second_live_token_of_a_name_and_a_missing_name(machine):
    relaytoken("--name", "agents")
    with pytest.raises(CommandError, match="already has a live relay token named 'agents'"):
        relaytoken("--name", "agents")
    with pytest.raises(CommandError, match="--name is required"):
        relaytoken()
    assert RelayToken.objects.count() == 1 and AuditEvent.objects.count() == 1


def test_it_names_the_known_machines_for_an_unknown_one(machine):
    with pytest.raises(CommandError, match=r"no machine named 'spark-9' \(machines: spark-1\)"):
        call_command("relaytoken", "--machine", "spark-9", "--name", "x")
    assert not RelayToken.objects.exists()


def test_it_issues_for_the_named_teams_machine_and_asks_for_a_team_when_two_have_the_name(machine):
    lab = MachineFactory(name="spark-1", team=TeamFactory(name="lab"))
    with pytest.raises(CommandError, match=r"more than one team \(default, lab\): choose the team"):
        relaytoken("--name", "agents")
    assert not RelayToken.objects.exists() and not AuditEvent.objects.exists()
    relaytoken("--team", "lab", "--name", "agents")
    assert RelayToken.objects.get().machine == lab
    assert AuditEvent.objects.get().team == lab.team
