import re

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import MetricsToken
from teams.models import AuditEvent, Role
from teams.roles import set_role

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def issue(client, team, name="grafana"):
    return client.post(reverse("runs:metrics-tokens", args=[team.pk]), {"name": name})


def shown_token(response):
    return re.search(r"<code>(sdm_[\w-]+)</code>", response.content.decode()).group(1)


def scrape(token):
    return Client().get(reverse("runs:metrics"), HTTP_AUTHORIZATION=f"Bearer {token}")


def test_it_lets_a_team_admin_issue_a_token_shown_once_that_scrapes_the_team(alpha, bravo):
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    admin = logged_in(alpha.owner)
    token = shown_token(issue(admin, alpha.team))
    page = admin.get(reverse("runs:metrics-tokens", args=[alpha.team.pk])).content.decode()
    assert "grafana" in page and token not in page  # listed, never shown again
    assert MetricsToken.objects.get().digest != token  # stored hashed
    text = scrape(token).content.decode()
    assert "alpha-box" in text and "bravo" not in text
    event = AuditEvent.objects.get(action="created")
    assert (event.actor_name, event.object_type, event.object_name) == (
        "alpha_owner", "metrics token", "grafana")


def test_it_revokes_a_token_from_the_page(alpha):
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    admin = logged_in(alpha.owner)
    token = shown_token(issue(admin, alpha.team))
    row = MetricsToken.objects.get()
    admin.post(reverse("runs:metrics-token-revoke", args=[alpha.team.pk, row.pk]))
    response = scrape(token)
    assert response.status_code == 401 and "alpha" not in response.content.decode()
    revoked = AuditEvent.objects.filter(action="revoked", object_name="grafana", actor_name="alpha_owner")
    assert revoked.exists()


def test_it_refuses_members_and_hides_the_page_from_other_teams(alpha, bravo):
    set_role(bravo.owner, bravo.team, Role.ADMIN)
    assert issue(logged_in(alpha.teammate), alpha.team).status_code == 403  # a member, not an admin
    assert issue(logged_in(bravo.owner), alpha.team).status_code == 404  # another team's admin
    assert logged_in(bravo.owner).get(reverse("runs:metrics-tokens", args=[alpha.team.pk])).status_code == 404
    assert not MetricsToken.objects.exists()
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    issue(logged_in(alpha.owner), alpha.team)
    row = MetricsToken.objects.get()
    revoke = reverse("runs:metrics-token-revoke", args=[alpha.team.pk, row.pk])
    assert logged_in(alpha.teammate).post(revoke).status_code == 403
    assert logged_in(bravo.owner).post(revoke).status_code == 404
    row.refresh_from_db()
    assert row.revoked is None
