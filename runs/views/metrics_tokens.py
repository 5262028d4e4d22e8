"""A team's metrics tokens: a team admin issues one (shown once) and revokes it.

A metrics token lets a Prometheus scrape ``GET /metrics`` without a session and shows only the
team's own machines' series (runs.results.prometheus). Other members of the team get a 403;
anyone outside it a 404, as for any of the team's objects.
"""
from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from engines.access import get_visible_or_404
from runs.models import MetricsToken
from teams import audit
from teams.models import Team
from teams.roles import Role, require_role


class TokenForm(forms.Form):
    """The name of a new token: what scrapes with it, e.g. "grafana"."""

    name = forms.CharField(label=_("name"), max_length=100,
                           help_text=_("what scrapes with it, e.g. the team's Prometheus"))


def _admin_team(request: HttpRequest, pk: int) -> Team:
    team = get_visible_or_404(request.user, Team, pk=pk)
    require_role(request.user, team, Role.ADMIN)
    return team


@login_required
@never_cache  # the answer that issues a token holds it
def token_list(request: HttpRequest, pk: int) -> HttpResponse:
    """The team's tokens, and the form that issues one; a new token is shown on this answer only."""
    team = _admin_team(request, pk)
    form, plain = TokenForm(request.POST or None), ""
    if request.method == "POST" and form.is_valid():
        token, plain = MetricsToken.issue(MetricsToken.PREFIX, team=team, name=form.cleaned_data["name"],
                                          created_by=request.user)
        audit.record(request.user, "created", token, team, request=request, object_type="metrics token")
        form = TokenForm()
    tokens = MetricsToken.objects.filter(team=team).select_related("created_by")
    return render(request, "runs/metrics_tokens.html",
                  {"team": team, "form": form, "plain": plain, "tokens": tokens})


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int, token_pk: int) -> HttpResponse:
    """Revoke one of the team's tokens: a scrape with it gets 401 from now on."""
    team = _admin_team(request, pk)
    token = get_visible_or_404(request.user, MetricsToken.objects.filter(team=team), pk=token_pk)
    if token.revoked is None:
        token.revoke()
        audit.record(request.user, "revoked", token, team, request=request, object_type="metrics token")
    return redirect("runs:metrics-tokens", pk=team.pk)
