"""Admin for runs: read-mostly, since runs are written by workers."""
from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from runs.actions.sweeps import sweep_teams
from runs.actions.webhooks import save_refusal
from runs.models import Alert, MetricsToken, Run, Schedule, Sweep, SweepExecution
from runs.views.schedules import ScheduleForm
from teams.admin_audit import AuditedAdmin
from teams.models import Team


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


class SweepAdminForm(forms.ModelForm):
    """The admin's sweep form, with the webhook policy the sweep page applies."""

    webhook_url = forms.URLField(required=False, max_length=500, assume_scheme="https")

    class Meta:
        model = Sweep
        fields = ["name", "configs", "jobs", "repetitions", "baseline", "webhook_url", "noise_floor_pct",
                  "created_by", "created"]

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data.get("webhook_url") or ""
        if url and (why := save_refusal(url)):
            raise forms.ValidationError(why)
        return url


@admin.register(Sweep)
class SweepAdmin(AuditedAdmin):
    form = SweepAdminForm
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


@admin.register(MetricsToken)
class MetricsTokenAdmin(admin.ModelAdmin):
    """Listed, never made here: a token is shown once, on the team's metrics tokens page or by
    ``manage.py metricstoken``."""

    list_display = ["name", "team", "created", "created_by", "last_used", "revoked"]
    list_filter = ["team"]
    readonly_fields = ["team", "name", "created_by", "last_used"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
