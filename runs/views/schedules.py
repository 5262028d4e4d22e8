"""Pages of schedules (list with status, create, edit, delete) and of regression alerts."""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from engines.access import User, get_visible_or_404, visible
from engines.templatetags.engine_words import words
from runs.actions import alerts
from runs.actions.schedules import schedule_status, schedule_statuses, validate_cron, validate_time_zone
from runs.actions.sweeps import record_sweep, sweep_teams
from runs.models import Alert, Schedule, Sweep
from runs.results.export import table_response, wants_export
from teams.changes import changed_fields, snapshot
from teams.roles import Role, require_role, require_role_in_each

ALERTS_SHOWN = 200
DEFAULT_CRON = Schedule._meta.get_field("cron").default


class ScheduleForm(forms.ModelForm):
    """A schedule: a cron line with its time zone (nightly at 02:00 UTC by default) or every N seconds."""

    class Meta:
        model = Schedule
        fields = ["sweep", "cron", "time_zone", "every_seconds", "enabled"]
        labels = {
            "sweep": _("Sweep"), "cron": _("Cron line"), "every_seconds": _("Or every N seconds"),
            "time_zone": _("Time zone"), "enabled": _("Enabled"),
        }
        help_texts = {
            "cron": _("minute hour day-of-month month day-of-week; default: nightly at 02:00"),
            "time_zone": _("the cron line's time zone, e.g. UTC or Europe/Berlin"),
            "every_seconds": _("when set, the schedule fires every N seconds and the cron line is not used"),
        }

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cron"].required = False
        # Only the user's teams' sweeps are offered; another team's posted pk is an invalid choice.
        field = cast("forms.ModelChoiceField[Sweep]", self.fields["sweep"])
        field.queryset = visible(user, Sweep)

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"].strip()
        try:
            validate_time_zone(name)
        except ValueError as exc:
            raise forms.ValidationError(str(words(exc.args[0]))) from None
        return name

    def clean_cron(self) -> str:
        line = " ".join(self.cleaned_data["cron"].split())
        if line:
            try:
                validate_cron(line)
            except ValueError as exc:
                raise forms.ValidationError(str(words(exc.args[0]))) from None
        return line

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if not cleaned.get("cron") and "cron" not in self.errors:
            if cleaned.get("every_seconds"):
                cleaned["cron"] = DEFAULT_CRON  # kept for when the interval is cleared
            else:
                self.add_error("cron", _("give a cron line, or a number of seconds below"))
        return cleaned


@login_required
def schedule_list(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    schedules = schedule_statuses(visible(request.user, Schedule))
    rows = [{"schedule": s, "status": schedule_status(s, now)} for s in schedules]
    ctx = {"rows": rows}
    return render(request, "runs/schedule_list.html", ctx)


def _edit(request: HttpRequest, schedule: Schedule | None) -> HttpResponse:
    """The schedule's form: the member role in its sweep's teams, before and after the edit."""
    require_role_in_each(request.user, sweep_teams(schedule.sweep) if schedule else [], Role.MEMBER)
    data = request.POST if request.method == "POST" else None
    form = ScheduleForm(data, instance=schedule, user=request.user)
    before = snapshot(schedule, form.fields)
    if form.is_valid():
        require_role_in_each(request.user, sweep_teams(form.cleaned_data["sweep"]), Role.MEMBER)
        saved = form.save(commit=False)
        if schedule is None and request.user.is_authenticated:
            saved.created_by = request.user
        saved.save()
        if schedule is None:
            record_sweep(request.user, "created", saved, saved.sweep, request=request)
        elif fields := changed_fields(before, saved):
            record_sweep(request.user, "changed", saved, saved.sweep, request=request, fields=fields)
        return redirect("runs:schedule-list")
    ctx = {"form": form, "schedule": schedule}
    return render(request, "runs/schedule_form.html", ctx, status=400 if form.errors else 200)


@login_required
def schedule_create(request: HttpRequest) -> HttpResponse:
    return _edit(request, None)


@login_required
def schedule_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _edit(request, get_visible_or_404(request.user, Schedule.objects.select_related("sweep"), pk=pk))


@login_required
def schedule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for confirmation; POST deletes the schedule (and its beat task)."""
    schedule = get_visible_or_404(request.user, Schedule.objects.select_related("sweep"), pk=pk)
    require_role_in_each(request.user, sweep_teams(schedule.sweep), Role.MEMBER)
    if request.method == "POST":
        record_sweep(request.user, "deleted", schedule, schedule.sweep, request=request)
        schedule.delete()
        return redirect("runs:schedule-list")
    return render(request, "runs/schedule_confirm_delete.html", {"schedule": schedule})


def alert_rows(alert_list: list[Alert]) -> list[dict[str, Any]]:
    """Alerts with their figures as text, for templates (the home page shows them too)."""
    return [
        {"alert": a, "baseline": alerts.figure_text(a, "baseline"), "value": alerts.figure_text(a, "value"),
         "baseline_interval": alerts.interval_of(a, "baseline"),
         "value_interval": alerts.interval_of(a, "value"),
         "throttle": alerts.throttle_note(a), "failed": alerts.failed_note(a)}
        for a in alert_list
    ]


@login_required
def alert_list(request: HttpRequest) -> HttpResponse:
    show_all = request.GET.get("show") == "all"
    found = visible(request.user, Alert.objects.select_related("config__engine", "execution__sweep"))
    if not show_all:
        found = found.filter(resolved__isnull=True)
    fmt = wants_export(request)
    if fmt:
        return table_response(alert_export(list(found[:ALERTS_SHOWN])), ALERT_COLUMNS, fmt, "alerts")
    ctx = {"rows": alert_rows(list(found[:ALERTS_SHOWN])), "show_all": show_all, "limit": ALERTS_SHOWN}
    return render(request, "runs/alert_list.html", ctx)


ALERT_COLUMNS = (
    "id", "sweep_run", "config", "job", "benchmark", "metric", "baseline_median", "value_median",
    "delta_pct", "created", "resolved", "webhook_outcome", "throttle", "failed",
)


def alert_export(alert_list: list[Alert]) -> list[dict[str, Any]]:
    """Alerts as flat rows for CSV/JSON (never the webhook URL, only what posting gave)."""
    return [
        {
            "id": a.pk, "sweep_run": a.execution_id, "config": a.config.name, "job": a.job,
            "benchmark": a.benchmark, "metric": a.label, "baseline_median": a.baseline.get("median"),
            "value_median": a.value.get("median"), "delta_pct": a.delta_pct, "created": a.created.isoformat(),
            "resolved": a.resolved.isoformat() if a.resolved else None, "webhook_outcome": a.webhook_outcome,
            "throttle": alerts.throttle_note(a), "failed": alerts.failed_note(a),
        }
        for a in alert_list
    ]


@login_required
@require_POST
def alert_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    found = Alert.objects.select_related("config__engine__machine__team")
    alert = get_visible_or_404(request.user, found, pk=pk)
    require_role(request.user, alert.config.machine.team, Role.MEMBER)
    alerts.resolve(alert)
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        return redirect(back)
    return redirect(reverse("runs:alert-list"))
