"""The compare pages: any runs, configs or sweep runs side by side (with its exports and HTML
report), and the older page comparing two configs, B against A."""
from __future__ import annotations

from typing import cast

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from engines import revisions
from engines.access import visible
from engines.models import EngineConfig
from runs.results.comparison import (
    EXPORT_COLUMNS,
    Comparison,
    SelectionError,
    build_comparison,
    parse_selection,
)
from runs.results.export import table_response, wants_export
from runs.results.report import report_response
from runs.results.scorecard import LATEST_RUNS, compare_configs

ERRORS = {"invalid_choice": _("there is no config with id %(value)s")}


class CompareForm(forms.Form):
    """Two configs picked by id; the choices are the configs listed in the page's selects."""

    a = forms.TypedChoiceField(label=_("config A"), coerce=int, error_messages=ERRORS)
    b = forms.TypedChoiceField(label=_("config B"), coerce=int, error_messages=ERRORS)

    def __init__(self, data: dict[str, str] | None, configs: list[EngineConfig]) -> None:
        super().__init__(data)
        for name in ("a", "b"):
            cast(forms.ChoiceField, self.fields[name]).choices = [(c.pk, c.name) for c in configs]

    def messages(self) -> list[str]:
        """Each error with the field it is about, e.g. "config B: there is no config with id 99"."""
        errors = self.errors.items()
        return [f"{self.fields[name].label}: {error}" for name, messages in errors for error in messages]


@login_required
def compare_configs_page(request: HttpRequest) -> HttpResponse:
    """GET ?a=<id>&b=<id>: B compared with A; the form alone until both are given."""
    configs = list(visible(request.user, EngineConfig.objects.select_related("engine").order_by("name")))
    both_given = "a" in request.GET and "b" in request.GET
    form = CompareForm(request.GET if both_given else None, configs)
    # (name, label, the id as sent) for each select, so a wrong id is shown unselected.
    fields = [(name, form.fields[name].label, request.GET.get(name, "")) for name in ("a", "b")]
    ctx = {"configs": configs, "fields": fields, "form": form, "latest_runs": LATEST_RUNS}
    if form.is_bound and form.is_valid():
        by_pk = {c.pk: c for c in configs}
        a, b = by_pk[form.cleaned_data["a"]], by_pk[form.cleaned_data["b"]]
        changes = revisions.diff(revisions.settings_of(a), revisions.settings_of(b))
        ctx |= {"a": a, "b": b, "rows": compare_configs(a, b), "setting_changes": changes}
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "runs/compare_configs.html", ctx, status=status)


@login_required
def compare_page(request: HttpRequest) -> HttpResponse:
    """GET ?runs=&configs=&sweep_runs=&baseline=: the comparison; ?format=csv|json|html downloads it."""
    found = visible(request.user, EngineConfig.objects.select_related("engine__machine"))
    configs = list(found.order_by("name"))
    ctx = {"configs": configs, "latest_runs": LATEST_RUNS, "form_values": request.GET, "chosen_configs": []}
    try:
        selection = parse_selection(dict(request.GET.lists()))
        known = {c.pk: c for c in configs}
        comparison = None if selection.empty else build_comparison(selection, known, user=request.user)
    except SelectionError as error:
        return render(request, "runs/compare.html", ctx | {"error": error}, status=400)
    ctx |= {"chosen_configs": selection.configs, "empty": not selection.empty and comparison is None}
    if comparison is None:
        return render(request, "runs/compare.html", ctx)
    if request.GET.get("format") == "html":
        return _report(request, comparison)
    if fmt := wants_export(request):
        return table_response(comparison.export(), EXPORT_COLUMNS, fmt, "sparkdash-compare")
    return render(request, "runs/compare.html", ctx | _links(comparison))


def _report(request: HttpRequest, comparison: Comparison) -> HttpResponse:
    """The HTML report in ?lang= (a code of settings.LANGUAGES), else the page's language."""
    language = request.GET.get("lang") or None
    codes = [code for code, _ in settings.LANGUAGES]
    if language is not None and language not in codes:
        message = gettext("lang: %(lang)s is not a language of the report (%(codes)s)")
        return HttpResponseBadRequest(message % {"lang": language, "codes": ", ".join(codes)},
                                      content_type="text/plain; charset=utf-8")
    return report_response(comparison, language)


def _links(comparison: Comparison) -> dict[str, object]:
    selection = comparison.selection
    return {
        "comparison": comparison,
        "permalink": selection.query(),
        "csv_query": selection.query(format="csv"),
        "json_query": selection.query(format="json"),
        "report_query": selection.query(format="html"),
    }
