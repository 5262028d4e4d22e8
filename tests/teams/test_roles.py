"""teams.roles: which role a user holds in a team, and the server-side check."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied

from teams.models import Role
from teams.roles import has_role, require_role, role_of, set_role
from tests.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_counts_a_member_without_a_role_row_as_a_member():
    team = TeamFactory()
    user = UserFactory(teams=[team])
    assert role_of(user, team) == Role.MEMBER


def test_it_gives_strangers_and_anonymous_users_no_role():
    team, other = TeamFactory(), TeamFactory()
    stranger = UserFactory(teams=[other])
    assert role_of(stranger, team) is None
    assert role_of(AnonymousUser(), team) is None
    assert not has_role(stranger, team, Role.VIEWER)


def test_it_ranks_roles_so_an_admin_may_do_what_a_member_may():
    team = TeamFactory()
    admin, viewer = UserFactory(), UserFactory()
    set_role(admin, team, Role.ADMIN)
    set_role(viewer, team, Role.VIEWER)
    assert has_role(admin, team, Role.MEMBER) and has_role(admin, team, Role.ADMIN)
    assert has_role(viewer, team, Role.VIEWER) and not has_role(viewer, team, Role.MEMBER)


def test_it_refuses_a_viewer_with_a_403_that_names_the_role_needed():
    team = TeamFactory()
    viewer = UserFactory()
    set_role(viewer, team, Role.VIEWER)
    with pytest.raises(PermissionDenied, match="member"):
        require_role(viewer, team, Role.MEMBER)


def test_it_gives_a_superuser_the_admin_role_everywhere():
    team = TeamFactory()
    root = UserFactory(is_superuser=True, teams=[])
    assert role_of(root, team) == Role.ADMIN


def test_it_keeps_one_role_per_member_when_changed():
    team = TeamFactory()
    user = UserFactory(teams=[])
    set_role(user, team, Role.VIEWER)
    set_role(user, team, Role.ADMIN)
    assert team.roles.get(user=user).role == Role.ADMIN
    assert team.members.filter(pk=user.pk).exists()
