"""Django admin edits in the audit log: superusers' saves and deletes are recorded like the pages'.

Mix :class:`AuditedAdmin` into a ``ModelAdmin`` and say which team an object belongs to with
``audit_team``; the admin's own history stays as it is, this adds the team's log entry.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest

from teams import audit
from teams.models import Team

__all__ = ["AuditedAdmin"]


class AuditedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose saves (created, changed with the field names) and deletes are audited."""

    def audit_team(self, obj: Any) -> Team | None:
        """The team whose log gets the event; override per model."""
        return None

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            audit.record(request.user, "created", obj, self.audit_team(obj), request=request, via="admin")
        elif form.changed_data:
            audit.record(request.user, "changed", obj, self.audit_team(obj), request=request, via="admin",
                         fields=sorted(set(form.changed_data) - {"api_key", "clear_api_key"} | _key(form)))

    def delete_model(self, request: HttpRequest, obj: Model) -> None:
        team = self.audit_team(obj)
        audit.record(request.user, "deleted", obj, team, request=request, via="admin")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            audit.record(request.user, "deleted", obj, self.audit_team(obj), request=request, via="admin")
        super().delete_queryset(request, queryset)


def _key(form: ModelForm) -> set[str]:
    """An engine's API key is named as changed, never shown (its value is not in the log)."""
    return {"api_key"} if {"api_key", "clear_api_key"} & set(form.changed_data) else set()
