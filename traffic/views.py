"""The Traffic pages of a machine: its relay and real-traffic figures, the JSON the page polls, its
conversations, one conversation's steps (with its captured bodies) and replaying it as a run.

Every view finds the machine through engines.access, so another team's machine is a 404 and its
captured bodies are never shown to anyone outside its team (superusers see everything, as elsewhere).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_POST

from engines.access import User, get_visible_or_404, visible
from engines.models import EngineConfig, Machine
from runs.actions.runs import start_replay
from teams import audit
from teams.decorators import api_login_required
from teams.roles import Role, has_role, require_role, teams_with_role
from traffic.captured_bodies import replay_requests
from traffic.models import TrafficRecord
from traffic.pages import conversation_rows, payload, shown_warnings, window_records
from traffic.stats import DEFAULT_WINDOW, WINDOW_LABELS, WINDOWS, new_input_share
from traffic.texts import share_text
from traffic.warnings import traffic_warnings

CONVERSATIONS_WINDOW = "24h"


def _machine(request: HttpRequest, pk: int) -> Machine:
    return get_visible_or_404(request.user, Machine.objects.select_related("team"), pk=pk)


def _window(request: HttpRequest, default: str = DEFAULT_WINDOW) -> str:
    window = request.GET.get("window", default)
    return window if window in WINDOWS else default


@login_required
@require_GET
def traffic_page(request: HttpRequest, pk: int) -> HttpResponse:
    """GET /machines/<id>/traffic/?window=15m|1h|24h: the relay, the window's figures, charts,
    warnings and the latest requests; static/js/traffic.js keeps them live."""
    machine = _machine(request, pk)
    window = _window(request)
    data = payload(machine, window, 0, timezone.now(), with_stats=True)
    return render(request, "traffic/traffic.html", {
        "machine": machine, "data": data, "stats": data["stats"], "warnings": data["warnings"],
        "relay": data["relay"], "window": window, "windows": WINDOW_LABELS,
        "latest": list(reversed(data["records"])),
        "can_manage_tokens": has_role(request.user, machine.team, Role.ADMIN),
    })


@require_GET
@api_login_required
def records_json(request: HttpRequest, pk: int) -> JsonResponse:
    """GET /machines/<id>/traffic/records.json?since=<id>&window=1h[&stats=1]: the records after
    `since` (the latest 50, oldest first) and the relay's state; the window's figures and warnings
    when there are new records or stats=1 (else null)."""
    machine = _machine(request, pk)
    try:
        since = int(request.GET.get("since", "0"))
    except ValueError:
        return JsonResponse({"error": "since must be a record id (a whole number)"}, status=400)
    window = request.GET.get("window", DEFAULT_WINDOW)
    if window not in WINDOWS:
        return JsonResponse({"error": f"window must be one of {', '.join(WINDOWS)}"}, status=400)
    with_stats = request.GET.get("stats") == "1"
    return JsonResponse(payload(machine, window, since, timezone.now(), with_stats))


@login_required
@require_POST
def capture_bodies(request: HttpRequest, pk: int) -> HttpResponse:
    """POST /machines/<id>/traffic/capture/: turn the capture of request and answer bodies on
    (capture_bodies=on) or off; the relay reads the setting from the machine. Team admins only."""
    machine = _machine(request, pk)
    require_role(request.user, machine.team, Role.ADMIN)
    was = machine.capture_bodies
    machine.capture_bodies = request.POST.get("capture_bodies") == "on"
    machine.save(update_fields=["capture_bodies"])
    if machine.capture_bodies != was:
        audit.record(request.user, "changed", machine, machine.team, request=request,
                     fields=["capture_bodies"], capture_bodies=machine.capture_bodies)
    return redirect("traffic:page", pk=machine.pk)


@login_required
@require_GET
def conversation_list(request: HttpRequest, pk: int) -> HttpResponse:
    """GET /machines/<id>/traffic/conversations/?window=24h: the window's conversations, newest first."""
    machine = _machine(request, pk)
    window = _window(request, CONVERSATIONS_WINDOW)
    records = list(window_records(machine, timezone.now() - timedelta(seconds=WINDOWS[window])))
    return render(request, "traffic/conversations.html", {
        "machine": machine, "rows": conversation_rows(records), "window": window, "windows": WINDOW_LABELS,
        "unkeyed": sum(1 for r in records if not r.conversation),
    })


class ReplayForm(forms.Form):
    """Replay a conversation's captured requests on a config the user may see."""

    config = forms.ModelChoiceField(queryset=EngineConfig.objects.none(), label=_("Config"))
    reps = forms.IntegerField(label=_("Repetitions"), min_value=1, max_value=50, initial=1)

    def __init__(self, user: User, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        configs = visible(user, EngineConfig.objects.select_related("engine__machine"))
        # A replay is a run: only configs of teams where the user holds the member role.
        configs = configs.filter(engine__machine__team__in=teams_with_role(user, Role.MEMBER))
        self.fields["config"].queryset = configs.order_by("name")  # type: ignore[attr-defined]


def _steps(machine: Machine, key: str) -> list[TrafficRecord]:
    steps = list(TrafficRecord.objects.filter(machine=machine, conversation=key).order_by("arrived", "pk"))
    if not steps:
        raise Http404("no such conversation on this machine")
    return steps


def _render_conversation(request: HttpRequest, machine: Machine, key: str, form: ReplayForm,
                         status: int = 200) -> HttpResponse:
    steps = _steps(machine, key)
    captured = [s for s in steps if s.request_body is not None]
    return render(request, "traffic/conversation.html", {
        "machine": machine, "key": key, "steps": steps, "captured": len(captured), "form": form,
        "share_text": share_text(new_input_share(steps)), "warnings": shown_warnings(traffic_warnings(steps)),
    }, status=status)


@login_required
@require_GET
def conversation_detail(request: HttpRequest, pk: int, key: str) -> HttpResponse:
    """GET /machines/<id>/traffic/conversations/<key>/: each step's figures and captured bodies."""
    machine = _machine(request, pk)
    return _render_conversation(request, machine, key, ReplayForm(request.user))


@login_required
@require_POST
def conversation_replay(request: HttpRequest, pk: int, key: str) -> HttpResponse:
    """POST .../conversations/<key>/replay/ (config, reps): a replay run of the captured request
    bodies, in the order they arrived, with no warm-up; its live page next."""
    machine = _machine(request, pk)
    require_role(request.user, machine.team, Role.MEMBER)
    form = ReplayForm(request.user, request.POST)
    if not form.is_valid():
        return _render_conversation(request, machine, key, form, status=400)
    bodies = replay_requests(_steps(machine, key), form.cleaned_data["config"].engine)
    if not bodies:
        form.add_error(None, gettext(
            "no chat request of this conversation was captured whole (body capture off, "
            "cut at its size cap, or not a chat request): turn on body capture first"))
        return _render_conversation(request, machine, key, form, status=400)
    params = {"requests": bodies, "reps": form.cleaned_data["reps"], "warmup": 0}
    try:
        run = start_replay(form.cleaned_data["config"], params, request.user, request=request)
    except ValueError as exc:
        reason = {"reason": exc}
        form.add_error(None, gettext("the captured requests cannot be replayed: %(reason)s") % reason)
        return _render_conversation(request, machine, key, form, status=400)
    return redirect(reverse("runs:detail", args=[run.pk]))
