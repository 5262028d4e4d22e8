"""The Claims pages: the list (and, for members, the forms that add a claim and check the seed claims on
the simulator), a claim's page (its latest check: verdicts, chart, provenance diff; "Check on…"), and
the check's reproduction report (HTML, Markdown, JSON). Thin: reading, storing and checking are
claims.actions'; who sees what is engines.access's, who may act teams.roles'.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from claims import actions
from claims.core.schema import ClaimRefused
from claims.forms import CheckForm, ClaimFileForm, RecipeForm
from claims.models import Check, Claim, ClaimSchedule
from claims.report import FORMATS, report_response
from claims.results import chart_data, check_view, latest_checks, verdict_rows
from engines.access import get_visible_or_404, visible
from engines.models import Engine
from teams.roles import Role, require_role, teams_with_role

REFRESH_S = 5  # the claim page reloads while its check runs


def refusal_text(exc: ClaimRefused) -> str:
    """A refusal in the reader's language (the same words as ``checkclaim`` prints in English)."""
    return gettext(exc.text) % exc.values


@login_required
@require_http_methods(["GET", "POST"])
def claim_list(request: HttpRequest) -> HttpResponse:
    """GET: the claims and their latest verdicts; POST (members): a claim file, a recipe, or the seeds."""
    member = teams_with_role(request.user, Role.MEMBER).exists()
    way = request.POST.get("way", "") if request.method == "POST" else ""
    file_form = ClaimFileForm(
        request.user,
        request.POST or None if way == "file" else None,
        request.FILES or None if way == "file" else None,
        prefix="file",
    )
    recipe_form = RecipeForm(
        request.user,
        request.POST or None if way == "recipe" else None,
        request.FILES or None if way == "recipe" else None,
        prefix="recipe",
    )
    if way in ("file", "recipe", "seeds") and not member:
        require_role(request.user, None, Role.MEMBER)
    if way == "seeds":
        return _seeds(request)
    form = file_form if way == "file" else recipe_form
    if way in ("file", "recipe") and form.is_valid():
        try:
            claim, _new = _add(request, way, form.cleaned_data)
        except ClaimRefused as exc:
            form.add_error(None, refusal_text(exc))
        else:
            return redirect("claims:detail", pk=claim.pk)
    claims = list(
        visible(request.user, Claim.objects.prefetch_related("figures")).select_related("team")[:200]
    )
    context = {
        "claims": claims,
        "latest": latest_checks(claims),
        "member": member,
        "file_form": file_form,
        "recipe_form": recipe_form,
        "way": way,
        "seeds": [p.name for p in actions.seed_files()],
    }
    return render(request, "claims/list.html", context, status=400 if way and form.errors else 200)


def _add(request: HttpRequest, way: str, cleaned: dict[str, Any]) -> tuple[Claim, bool]:
    team = cleaned["team"]
    if way == "file":
        name = cleaned["file"].name if cleaned.get("file") else "claim.yaml"
        return actions.add_claim_text(team, name, cleaned["claim_text"], request.user)
    given = actions.RecipeClaim(
        recipe_name=cleaned["recipe_name"],
        recipe_text=cleaned["recipe"],
        table=cleaned["table"],
        title=cleaned["title"],
        url=cleaned["url"],
        author=cleaned["author"],
        hardware=cleaned["hardware"],
        bandwidth_gbps=cleaned["bandwidth_gbps"],
        runs=cleaned["runs"],
    )
    return actions.add_recipe_claim(team, given, request.user)


def _seeds(request: HttpRequest) -> HttpResponse:
    """Store the seed claims in the user's first team and check each on the demo's simulator."""
    team = teams_with_role(request.user, Role.MEMBER).order_by("pk").first()
    if team is None:
        raise Http404("no team")
    engines = visible(request.user, Engine.objects.select_related("machine__team"))
    engines = engines.filter(machine__team__in=teams_with_role(request.user, Role.MEMBER))
    outcomes = actions.check_seeds(team, engines, request.user)
    return render(request, "claims/seeds.html", {"outcomes": outcomes})


@login_required
@require_http_methods(["GET", "POST"])
def claim_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A claim: its figures, its latest check (or ?check=N), and for members "Check on…"."""
    claim = get_visible_or_404(request.user, Claim.objects.select_related("team"), pk=pk)
    form = CheckForm(request.user, request.POST or None)
    if request.method == "POST":
        if not teams_with_role(request.user, Role.MEMBER).exists():
            require_role(request.user, claim.team, Role.MEMBER)
        if form.is_valid():
            try:
                check = _start(request, claim, form.cleaned_data)
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                return redirect(reverse("claims:detail", args=[claim.pk]) + f"?check={check.pk}")
    shown = _check(claim, request.GET.get("check", ""))
    view = check_view(shown) if shown else None
    context = {
        "claim": claim,
        "view": view,
        "form": form,
        "checks": claim.checks.select_related("engine")[:20],
        "can_check": teams_with_role(request.user, Role.MEMBER).exists(),
        "view_rows": verdict_rows(view) if view else [],
        "chart": chart_data(view) if view else [],
        "schedules": claim.schedules.select_related("engine"),
        "refresh_s": REFRESH_S if shown and shown.status == Check.Status.RUNNING else None,
    }
    return render(request, "claims/detail.html", context, status=400 if form.errors else 200)


def _start(request: HttpRequest, claim: Claim, cleaned: dict[str, Any]) -> Check:
    engine, config, runs = cleaned["engine"], cleaned["config"], cleaned["runs"]
    with transaction.atomic():
        check = actions.check_on(claim, engine, config, runs, request.user)
        if cleaned.get("nightly"):
            ClaimSchedule.objects.update_or_create(
                claim=claim,
                engine=engine,
                defaults={
                    "config": config,
                    "repetitions": runs,
                    "hour": cleaned.get("hour") or 0,
                    "enabled": True,
                    "created_by": request.user,
                },
            )
    return check


def _check(claim: Claim, asked: str) -> Check | None:
    checks = claim.checks.select_related("engine__machine", "config", "claim")
    if not asked:
        return checks.first()
    if not asked.isdigit() or len(asked) > 12:
        raise Http404("no such check")
    found = checks.filter(pk=int(asked)).first()
    if found is None:
        raise Http404("no such check")
    return found


@login_required
def check_report(request: HttpRequest, pk: int, check: int, fmt: str) -> HttpResponse:
    """The check's reproduction report: html (one offline file), md, or json; ?lang=en|ja."""
    claim = get_visible_or_404(request.user, Claim, pk=pk)
    found = claim.checks.select_related("engine__machine", "config", "claim").filter(pk=check).first()
    if found is None or fmt not in FORMATS:
        raise Http404("no such report")
    language = request.GET.get("lang") or None
    if language is not None and language not in ("en", "ja"):
        return HttpResponseBadRequest(f"lang: {language[:10]} is not a language of the report (en, ja)")
    return report_response(check_view(found), fmt, language)
