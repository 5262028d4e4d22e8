"""Admin for runs: read-mostly, since runs are written by workers."""
from __future__ import annotations

from django.contrib import admin

from engines.models import Team
from runs.actions.sweeps import sweep_teams
from runs.models import Alert, Run, Schedule, Sweep, SweepExecution
from runs.views.schedules import ScheduleForm
from teams.admin_audit import AuditedAdmin


def _first_team(sweep: Sweep) -> Team | None:
    """The audit log's team for a sweep edited in the admin (its configs' first team)."""
    teams = sweep_teams(sweep)
    return teams[0] if teams else None


@admin.register(Run)
class RunAdmin(AuditedAdmin):
    list_display = ["id", "config", "machine", "job", "status", "progress_done", "progress_total", "created"]
    list_filter = ["status", "job", "machine"]
    list_select_related = ["config", "machine"]
    readonly_fields = ["summary", "provenance", "progress_done", "progress_total", "started", "finished"]
    raw_id_fields = ["config", "created_by"]

    def audit_team(self, obj: Run) -> Team | None:
        return obj.machine.team


@admin.register(Sweep)
class SweepAdmin(AuditedAdmin):
    list_display = ["name", "repetitions", "baseline", "created"]
    filter_horizontal = ["configs"]

    def audit_team(self, obj: Sweep) -> Team | None:
        return _first_team(obj)


@admin.register(Schedule)
class ScheduleAdmin(AuditedAdmin):
    form = ScheduleForm  # validates the cron line and time zone, as the schedule pages do
    list_display = ["sweep", "cron", "every_seconds", "time_zone", "enabled"]
    list_filter = ["enabled"]

    def audit_team(self, obj: Schedule) -> Team | None:
        return _first_team(obj.sweep)


@admin.register(SweepExecution)
class SweepExecutionAdmin(admin.ModelAdmin):
    list_display = ["id", "sweep", "trigger", "created", "finished"]
    list_filter = ["trigger", "sweep"]
    readonly_fields = ["created", "finished"]


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ["id", "config", "label", "delta_pct", "created", "resolved"]
    list_filter = ["resolved"]
    raw_id_fields = ["execution", "config"]
