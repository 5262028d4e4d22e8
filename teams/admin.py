"""Admin for teams, roles and the audit log (read-only: the log is never edited)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from teams.admin_audit import AuditedAdmin
from teams.models import AuditEvent, Team, TeamRole


@admin.register(Team)
class TeamAdmin(AuditedAdmin):
    list_display = ["name"]
    filter_horizontal = ["members"]

    def audit_team(self, obj: Team) -> Team | None:
        return obj if obj.pk else None


@admin.register(TeamRole)
class TeamRoleAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["team", "role"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "team_name", "actor_name", "action", "object_type", "object_name", "address"]
    list_filter = ["action", "object_type", "team"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
