"""Forms of the team pages: adding a member, changing a role, adding a machine."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from engines.models import Machine, Team
from teams.models import Role

__all__ = ["AddMemberForm", "MachineForm", "RoleForm"]


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


class MachineForm(forms.ModelForm):
    """A new machine of the team: its name, where its engines listen, and its memory."""

    class Meta:
        model = Machine
        fields = ["name", "host", "bandwidth_gbps", "memory_gb", "notes"]
        labels = {"name": _("name"), "host": _("host"), "notes": _("notes")}
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}

    def _get_validation_exclusions(self) -> Any:
        # The team is set by the view, not the form; a name unique per team is still checked.
        exclude = super()._get_validation_exclusions()  # type: ignore[misc]  # Django's, not in the stubs
        exclude.discard("team")
        return exclude
