"""The team pages (teams/views.py): members and roles; admins only, audited (adding a machine:
tests/engines/test_machine_views.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from teams.models import AuditEvent, Role, TeamRole
from teams.roles import role_of, set_role
from tests.access_walk import logged_in
from tests.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db

ADDRESS = "10.1.2.3"


@pytest.fixture
def member(team):
    return UserFactory(username="max", teams=[team])  # no TeamRole row: a member


def test_it_refuses_a_member_changing_members_or_roles(team, member, admin):
    client = logged_in(member)
    other = UserFactory(username="newbie", teams=[])
    assert client.post(reverse("teams:member-add", args=[team.pk]),
                       {"username": "newbie", "role": "admin"}).status_code == 403
    assert client.post(reverse("teams:member-role", args=[team.pk, member.pk]),
                       {"role": "admin"}).status_code == 403
    assert client.post(reverse("teams:member-remove", args=[team.pk, admin.pk])).status_code == 403
    assert role_of(member, team) == Role.MEMBER and role_of(admin, team) == Role.ADMIN
    assert role_of(other, team) is None and not AuditEvent.objects.exists()


def test_it_lets_an_admin_add_change_and_remove_a_member(team, admin):
    client = logged_in(admin)
    newbie = UserFactory(username="newbie", teams=[])
    client.post(reverse("teams:member-add", args=[team.pk]), {"username": "newbie", "role": "viewer"},
                REMOTE_ADDR=ADDRESS)
    assert role_of(newbie, team) == Role.VIEWER
    client.post(reverse("teams:member-role", args=[team.pk, newbie.pk]), {"role": "member"})
    assert role_of(newbie, team) == Role.MEMBER
    client.post(reverse("teams:member-remove", args=[team.pk, newbie.pk]))
    assert role_of(newbie, team) is None and not TeamRole.objects.filter(user=newbie).exists()
    fields = ("actor", "action", "object_type", "object_name", "detail")
    events = list(AuditEvent.objects.order_by("id").values_list(*fields))
    assert events == [
        (admin.pk, "added", "member", "newbie", {"role": "viewer"}),
        (admin.pk, "role changed", "member", "newbie", {"before": "viewer", "after": "member"}),
        (admin.pk, "removed", "member", "newbie", {"role": "member"}),
    ]
    assert AuditEvent.objects.filter(address=ADDRESS).count() == 1


def test_it_says_which_username_is_unknown(team, admin):
    response = logged_in(admin).post(reverse("teams:member-add", args=[team.pk]),
                                     {"username": "ghost", "role": "member"})
    assert response.status_code == 400
    assert "no active user is named ghost" in response.content.decode()
    assert team.members.count() == 1 and not AuditEvent.objects.exists()


def test_it_keeps_the_teams_last_admin(team, admin):
    client = logged_in(admin)
    response = client.post(reverse("teams:member-role", args=[team.pk, admin.pk]), {"role": "viewer"})
    assert response.status_code == 400 and "last admin" in response.content.decode()
    assert client.post(reverse("teams:member-remove", args=[team.pk, admin.pk])).status_code == 400
    assert role_of(admin, team) == Role.ADMIN


def test_it_shows_a_viewer_the_members_and_no_forms(team, admin):
    viewer = UserFactory(username="vic", teams=[])
    set_role(viewer, team, Role.VIEWER)
    page = logged_in(viewer).get(reverse("teams:detail", args=[team.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "ada" in html and "vic" in html
    for name, args in [("teams:member-add", []), ("teams:member-role", [admin.pk]),
                       ("teams:member-remove", [admin.pk]), ("engines:machine-add", []), ("teams:audit", [])]:
        assert reverse(name, args=[team.pk, *args]) not in html


def test_it_lists_only_the_users_teams(team, member):
    TeamFactory(name="elsewhere")
    html = logged_in(member).get(reverse("teams:list")).content.decode()
    assert "lab" in html and "elsewhere" not in html
