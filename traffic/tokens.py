"""A machine's relay tokens, for its team's admins: the list, issuing one (shown once), revoking one.

The machine is found through engines.access (another team's machine is a 404), then the admin
role is required (a member or viewer gets 403 and no link to here). The plain token is on the
response to the issuing POST only, which no cache keeps; the database holds its SHA-256.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from engines.access import get_visible_or_404
from engines.models import Machine
from teams import audit
from teams.roles import Role, require_role
from traffic.gate import REFRESH_S
from traffic.models import RelayState, RelayToken


class TokenForm(forms.Form):
    """A new relay token's name: who or what will use it."""

    name = forms.CharField(label=_("Name"), max_length=100,
                           help_text=_("who or what uses it, e.g. “coding agents on spark-1”"))

    def __init__(self, machine: Machine, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.machine = machine

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if RelayToken.objects.filter(machine=self.machine, name=name, revoked__isnull=True).exists():
            raise forms.ValidationError(gettext("This machine already has a live token of that name: "
                                                "revoke it first, or choose another name."))
        return name


def _admin_machine(request: HttpRequest, pk: int) -> Machine:
    machine = get_visible_or_404(request.user, Machine, pk=pk)
    require_role(request.user, machine.team, Role.ADMIN)
    return machine


Issued = tuple[RelayToken, str]


def _render(request: HttpRequest, machine: Machine, form: TokenForm, issued: Issued | None = None,
            status: int = 200) -> HttpResponse:  # fmt: skip
    state = RelayState.objects.filter(machine=machine).first()
    response = render(request, "traffic/relay_tokens.html", {
        "machine": machine, "form": form, "tokens": RelayToken.objects.filter(machine=machine),
        "issued": issued[0] if issued else None, "plain": issued[1] if issued else "",
        "addresses": state.addresses if state else {}, "refresh_s": f"{REFRESH_S:g}",
    }, status=status)
    add_never_cache_headers(response)  # the issuing answer carries the token: no cache may keep it
    return response


@login_required
@require_http_methods(["GET", "POST"])
def relay_tokens(request: HttpRequest, pk: int) -> HttpResponse:
    """GET /machines/<id>/traffic/tokens/: the machine's relay tokens and a form for a new one.
    POST (name): issue one; the answer shows the plain token, this once."""
    machine = _admin_machine(request, pk)
    if request.method != "POST":
        return _render(request, machine, TokenForm(machine))
    form = TokenForm(machine, request.POST)
    if not form.is_valid():
        return _render(request, machine, form, status=400)
    token, plain = RelayToken.issue_for(machine, form.cleaned_data["name"], request.user)
    audit.record(request.user, "created", token, machine.team, request=request, machine=machine.name)
    return _render(request, machine, TokenForm(machine), issued=(token, plain))


@login_required
@require_POST
def revoke_relay_token(request: HttpRequest, pk: int, token_pk: int) -> HttpResponse:
    """POST /machines/<id>/traffic/tokens/<token id>/revoke/: the token stops working (a running
    relay refuses it within REFRESH_S seconds); its row stays, for the list and the audit log."""
    machine = _admin_machine(request, pk)
    token = get_object_or_404(RelayToken, pk=token_pk, machine=machine)
    if token.revoked is None:
        token.revoke()
        audit.record(request.user, "revoked", token, machine.team, request=request, machine=machine.name)
    return redirect("traffic:tokens", pk=machine.pk)
