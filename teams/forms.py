"""Forms of the team pages: adding a member, changing a role (a machine's form is engines')."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from teams.models import Role, Team

__all__ = ["AddMemberForm", "RoleForm"]


class RoleForm(forms.Form):
    """A member's new role."""

    role = forms.ChoiceField(label=_("role"), choices=Role.choices)


class AddMemberForm(RoleForm):
    """An existing user, by username, joins the team with a role."""

    username = forms.CharField(label=_("username"), max_length=150)
    field_order = ["username", "role"]

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team

    def clean_username(self) -> Any:
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=name, is_active=True).first()
        if user is None:
            raise forms.ValidationError(gettext("no active user is named %(name)s") % {"name": name})
        if self.team.members.filter(pk=user.pk).exists():
            raise forms.ValidationError(
                gettext("%(name)s is already in this team: change their role below") % {"name": name})
        return user
