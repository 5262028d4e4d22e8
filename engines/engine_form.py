"""The form a team admin adds or edits an engine with, in the dashboard.

Its program, log file and log command (a command line, file paths) are not offered here: those are
set in the admin or a config file by whoever runs the machine, where the worker's allowlists apply.
"""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.utils.translation import gettext_lazy as _

from engines.access import User
from engines.models import Engine, Machine
from teams.roles import Role, teams_with_role

__all__ = ["EngineForm"]


class EngineForm(forms.ModelForm):
    """An engine on a machine of a team where the user is admin; its URL must be that machine's."""

    class Meta:
        model = Engine
        fields = [
            "machine", "name", "kind", "base_url", "api_key", "launch", "simulator", "merge_system_messages",
        ]
        labels = {
            "machine": _("machine"), "name": _("name"), "kind": _("engine kind"), "api_key": _("API key"),
            "launch": _("launch"), "simulator": _("simulator"),
        }
        help_texts = {
            "base_url": _("on the machine itself: http://127.0.0.1:PORT, or the machine's host"),
            "api_key": _("sent as a bearer token; never shown again (leave blank to keep the stored one)"),
        }
        widgets = {"api_key": forms.PasswordInput(render_value=False)}

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast("forms.ModelChoiceField[Machine]", self.fields["machine"])
        admin_of = teams_with_role(user, Role.ADMIN)
        field.queryset = Machine.objects.filter(team__in=admin_of).select_related("team")
        self.stored_key = self.instance.api_key if self.instance.pk else ""

    def clean_api_key(self) -> str:
        """A blank key on an edit keeps the stored one (the page never shows it)."""
        return self.cleaned_data.get("api_key") or self.stored_key
