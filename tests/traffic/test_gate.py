"""traffic.gate: the relay command's gate answers from memory, keeps its digests while the database
is down, notes when tokens were used, and tells loopback addresses from the rest."""
from __future__ import annotations

import pytest
from django.db import DatabaseError

from tests.factories import MachineFactory
from traffic.gate import TokenGate, is_loopback
from traffic.models import RelayToken
from traffic.relay import Admission

pytestmark = pytest.mark.django_db


def test_it_is_open_without_the_key_on_loopback_until_a_token_is_issued():
    machine = MachineFactory()
    gate = TokenGate(machine.pk, open_when_none=True)
    assert gate("") is Admission.WITHOUT_KEY and gate("sdr_anything") is Admission.WITHOUT_KEY
    _, plain = RelayToken.issue_for(machine, "agents")
    gate.refresh()
    assert gate("") is Admission.REFUSED and gate(plain) is Admission.WITH_KEY


def test_it_refuses_everything_elsewhere_when_no_token_is_live():
    machine = MachineFactory()
    token, plain = RelayToken.issue_for(machine, "agents")
    gate = TokenGate(machine.pk, open_when_none=False)
    assert gate(plain) is Admission.WITH_KEY
    token.revoke()
    gate.refresh()
    assert gate(plain) is Admission.REFUSED and gate("") is Admission.REFUSED


def test_it_takes_no_token_of_another_machine():
    mine, other = MachineFactory(), MachineFactory()
    RelayToken.issue_for(mine, "agents")
    _, theirs = RelayToken.issue_for(other, "agents")
    assert TokenGate(mine.pk, open_when_none=True)(theirs) is Admission.REFUSED


def test_it_keeps_its_digests_and_the_uses_it_owes_while_the_database_is_down(monkeypatch):
    machine = MachineFactory()
    token, plain = RelayToken.issue_for(machine, "agents")
    gate = TokenGate(machine.pk, open_when_none=False)
    assert gate(plain) is Admission.WITH_KEY

    def down(machine_id):
        raise DatabaseError("the database is restarting")

    with monkeypatch.context() as patch:
        patch.setattr(RelayToken, "live_digests", down)
        with pytest.raises(DatabaseError):
            gate.refresh()
    assert gate(plain) is Admission.WITH_KEY
    gate.refresh()
    token.refresh_from_db()
    assert token.last_used is not None


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True), ("0.0.0.0", False),
    ("::", False), ("192.0.2.10", False), ("no-such-host.invalid", False),
])  # fmt: skip
def test_it_tells_loopback_addresses_from_the_rest(host, loopback):
    assert is_loopback(host) is loopback
