"""The import page: another tool's result file, uploaded, becomes runs of a config (member role)."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy

from engines.access import visible
from engines.models import EngineConfig
from runs.actions.imports import Imported, import_file
from runs.core.imports import TOOLS, Unreadable
from runs.views.start_form import error_text
from teams.roles import Role, has_role

MAX_BYTES = 32 * 1024 * 1024


class ImportForm(forms.Form):
    """The file and the config its results were measured with."""

    file = forms.FileField(label=gettext_lazy("Result file"))
    config = forms.ModelChoiceField(
        queryset=EngineConfig.objects.none(), label=gettext_lazy("Config"),
        help_text=gettext_lazy("the config the tool measured: its engine, model and settings"))

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        live = EngineConfig.objects.filter(archived=False).select_related("engine__machine__team")
        configs = visible(user, live)
        self.user = user
        cast = self.fields["config"]
        assert isinstance(cast, forms.ModelChoiceField)
        cast.queryset = configs.order_by("name")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_BYTES:
            raise forms.ValidationError(gettext("the file is %(size)s bytes; the limit is 32 MiB")
                                        % {"size": f"{upload.size:,}"})
        return upload

    def clean_config(self) -> EngineConfig:
        config: EngineConfig = self.cleaned_data["config"]
        if not has_role(self.user, config.machine.team, Role.MEMBER):
            raise forms.ValidationError(gettext("importing runs needs the member role in the config's team"))
        return config


@login_required
def import_page(request: HttpRequest) -> HttpResponse:
    """GET: the form; POST: the file's levels stored as runs, or why nothing was."""
    form = ImportForm(request.user, request.POST or None, request.FILES or None,
                      initial={"config": request.GET.get("config", "")[:12]})
    done: Imported | None = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            done = import_file(upload.name, upload.read(), form.cleaned_data["config"], request.user, request)
        except Unreadable as exc:
            form.add_error("file", error_text(exc))
    status = 400 if request.method == "POST" and form.errors else 200
    return render(request, "runs/import.html", {"form": form, "done": done, "tools": TOOLS.values()},
                  status=status)
