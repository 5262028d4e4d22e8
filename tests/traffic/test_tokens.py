"""The relay-token pages: a team admin issues (shown once, stored as a digest) and revokes; members,
viewers and strangers cannot, and see no link; every issue and revocation is in the audit log."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from teams.models import AuditEvent, Role
from teams.roles import set_role
from teams.tokens import digest
from tests.access_walk import logged_in
from tests.factories import team_world
from traffic.models import RelayToken

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'<code id="plain-token">(sdr_[A-Za-z0-9_-]+)</code>')


@pytest.fixture
def admin(alpha):
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    return logged_in(alpha.owner)


def tokens_url(world) -> str:
    return reverse("traffic:tokens", args=[world.machine.pk])


def revoke_url(machine, token) -> str:
    return reverse("traffic:revoke_token", args=[machine.pk, token.pk])


def issue(client, world, name: str = "agents") -> str:
    answer = client.post(tokens_url(world), {"name": name})
    assert answer.status_code == 200
    return TOKEN.search(answer.content.decode()).group(1)


def test_it_shows_a_new_token_once_and_stores_only_its_digest(admin, alpha):
    answer = admin.post(tokens_url(alpha), {"name": "agents"})
    plain = TOKEN.search(answer.content.decode()).group(1)
    assert "no-store" in answer["Cache-Control"]
    token = RelayToken.objects.get(machine=alpha.machine)
    assert (token.name, token.team, token.created_by) == ("agents", alpha.team, alpha.owner)
    assert token.digest == digest(plain) and plain not in str(list(RelayToken.objects.values()))
    later = admin.get(tokens_url(alpha)).content.decode()
    assert "agents" in later and plain not in later and not TOKEN.search(later)


def test_it_writes_issue_and_revocation_to_the_audit_log(admin, alpha):
    plain = issue(admin, alpha)
    token = RelayToken.objects.get()
    assert RelayToken.live(plain) == token
    answer = admin.post(revoke_url(alpha.machine, token))
    assert answer.status_code == 302
    token.refresh_from_db()
    assert token.revoked is not None and RelayToken.live(plain) is None
    events = list(AuditEvent.objects.filter(object_type="relaytoken").order_by("at", "pk"))
    assert [(e.action, e.actor, e.team, e.object_name) for e in events] == [
        ("created", alpha.owner, alpha.team, "agents"), ("revoked", alpha.owner, alpha.team, "agents")]
    assert all(e.address == "127.0.0.1" for e in events)
    assert "Revoke" not in admin.get(tokens_url(alpha)).content.decode()  # nothing left to revoke


def test_it_refuses_a_second_live_token_of_the_same_name(admin, alpha):
    issue(admin, alpha)
    answer = admin.post(tokens_url(alpha), {"name": "agents"})
    assert answer.status_code == 400 and "already has a live token of that name" in answer.content.decode()
    assert RelayToken.objects.count() == 1


@pytest.mark.parametrize("role", [Role.MEMBER, Role.VIEWER])
def test_it_refuses_members_and_viewers_and_shows_them_no_link(alpha, role):
    set_role(alpha.teammate, alpha.team, role)
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    existing, _ = RelayToken.issue_for(alpha.machine, "agents", alpha.owner)
    client = logged_in(alpha.teammate)
    assert client.get(tokens_url(alpha)).status_code == 403
    assert client.post(tokens_url(alpha), {"name": "mine"}).status_code == 403
    assert client.post(revoke_url(alpha.machine, existing)).status_code == 403
    traffic = reverse("traffic:page", args=[alpha.machine.pk])
    assert 'id="relay-tokens-link"' not in client.get(traffic).content.decode()
    assert 'id="relay-tokens-link"' in logged_in(alpha.owner).get(traffic).content.decode()
    existing.refresh_from_db()
    assert RelayToken.objects.count() == 1 and existing.revoked is None
    assert not AuditEvent.objects.filter(object_type="relaytoken").exists()


def test_it_hides_another_teams_tokens_behind_a_404(alpha):
    other = team_world("beta")
    set_role(other.owner, other.team, Role.ADMIN)
    theirs, _ = RelayToken.issue_for(alpha.machine, "agents")
    client = logged_in(other.owner)
    assert client.get(tokens_url(alpha)).status_code == 404
    assert client.post(revoke_url(alpha.machine, theirs)).status_code == 404
    # Nor through their own machine's URL.
    assert client.post(revoke_url(other.machine, theirs)).status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked is None


def test_it_needs_the_csrf_token_to_issue(alpha):
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    client = logged_in(alpha.owner, enforce_csrf_checks=True)
    assert client.post(tokens_url(alpha), {"name": "agents"}).status_code == 403
    assert not RelayToken.objects.exists()


def test_it_sends_anonymous_users_to_the_login_page(alpha, client):
    assert client.get(tokens_url(alpha)).status_code == 302
    assert client.post(tokens_url(alpha), {"name": "agents"}).status_code == 302
    assert not RelayToken.objects.exists()
