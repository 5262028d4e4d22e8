"""The access walk over the teams app's URLs: anonymous users go to the login page, strangers get
404, a team's members get 403 on the admin pages, team admins and superusers get through."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.shortcuts import resolve_url
from django.test import Client

from teams.models import Role
from tests.access_walk import Endpoint, admin_status, call, logged_in, posts_without_token, url_names, url_of
from tests.factories import UserFactory
from tests.teams.people import person


def _mate(world):
    return {"user_pk": world.teammate.pk}


# Every URL of the teams app; a URL added without a rule here fails the walk. Posted without data:
# the forms' errors (400) for admins, the refusal (403) for members.
URLS = {
    "teams:list": Endpoint(),
    "teams:detail": Endpoint("team"),
    "teams:member-add": Endpoint("team", "POST", 403, admin_status=400),
    "teams:member-role": Endpoint("team", "POST", 403, admin_status=400, more=_mate),
    "teams:member-remove": Endpoint("team", "POST", 403, admin_status=302, more=_mate),
    "teams:audit": Endpoint("team", member_status=403, admin_status=200),
}
NAMES = url_names("teams")


def rule(name):
    if name not in URLS:
        pytest.fail(f"{name} has no access rule: add it to URLS in {__name__}")
    return URLS[name]


def test_it_has_a_rule_for_every_url():
    assert set(NAMES) == set(URLS)


@pytest.mark.parametrize("name", NAMES)
def test_it_sends_anonymous_users_to_the_login_page(name, alpha):
    response = call(Client(), name, rule(name), alpha)
    assert response.status_code == 302
    assert response["Location"].startswith(resolve_url(settings.LOGIN_URL) + "?next=")


@pytest.mark.parametrize("role", ["owner", "teammate"])
@pytest.mark.parametrize("name", NAMES)
def test_it_gives_members_the_team_pages_but_not_the_admin_ones(name, role, alpha, bravo):
    response = call(logged_in(getattr(alpha, role)), name, rule(name), alpha)
    assert response.status_code == rule(name).member_status
    assert posts_without_token(response) <= 0
    if rule(name).target is None:
        assert b"alpha-" in response.content and b"bravo-" not in response.content


@pytest.mark.parametrize("name", NAMES)
def test_it_hides_another_team_from_a_stranger(name, alpha, bravo):
    response = call(logged_in(bravo.owner), name, rule(name), alpha)
    if rule(name).target is not None:
        assert response.status_code == 404
    else:
        assert b"bravo-" in response.content and b"alpha-" not in response.content


@pytest.mark.parametrize("name", NAMES)
def test_it_lets_a_team_admin_and_a_superuser_through(name, alpha):
    for user in (person(alpha.team, Role.ADMIN, "alpha_admin"),
                 UserFactory(username="root", is_superuser=True, is_staff=True, teams=[])):
        response = call(logged_in(user), name, rule(name), alpha)
        assert response.status_code == admin_status(rule(name)), user
        assert posts_without_token(response) <= 0
        alpha.team.members.add(alpha.teammate)  # a remove took them out: put them back


@pytest.mark.parametrize("name", NAMES)
def test_it_refuses_a_post_without_the_csrf_token(name, alpha):
    client = logged_in(person(alpha.team, Role.ADMIN, "alpha_admin"), enforce_csrf_checks=True)
    assert client.post(url_of(name, rule(name), alpha)).status_code == 403
