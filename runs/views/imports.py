"""The import page: another tool's result file, uploaded, becomes runs of a config (member role).
A file that contradicts the config is refused naming both sides, unless the box accepting the
mismatch is ticked (runs.core.imports.match)."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy

from engines.access import visible
from engines.models import Engine, EngineConfig
from runs.actions.imports import Imported, NotStored, import_file
from runs.core.imports import TOOLS, Unreadable
from runs.core.imports.match import REFUSED, Mismatched
from runs.views.start_form import error_text
from teams.roles import Role, has_role

MAX_BYTES = 32 * 1024 * 1024


class ImportForm(forms.Form):
    """The file and the config its results were measured with."""

    file = forms.FileField(label=gettext_lazy("Result file"))
    config = forms.ModelChoiceField(
        queryset=EngineConfig.objects.none(), label=gettext_lazy("Config"), required=False,
        help_text=gettext_lazy("the config the tool measured: its engine, model and settings"))
    engine = forms.ModelChoiceField(
        queryset=Engine.objects.none(), label=gettext_lazy("Or an engine"), required=False,
        help_text=gettext_lazy("without a config: the engine the tool measured; a config named after the "
                               "tool and the file's model is made on it (or reused)"))
    accept_mismatch = forms.BooleanField(
        label=gettext_lazy("Import even if the file's model, engine or backend does not match the config"),
        required=False,
        help_text=gettext_lazy("only when you know why they differ: each run records what was accepted, and "
                               "the run page, the cross-tool view and compare flag it"))

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        live = EngineConfig.objects.filter(archived=False).select_related("engine__machine__team")
        configs = visible(user, live)
        self.user = user
        for name, queryset in (("config", configs.order_by("name")),
                               ("engine", visible(user, Engine.objects.select_related("machine__team")))):
            field = self.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = queryset

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_BYTES:
            raise forms.ValidationError(gettext("the file is %(size)s bytes; the limit is 32 MiB")
                                        % {"size": f"{upload.size:,}"})
        return upload

    def clean_accept_mismatch(self) -> bool:
        """Ticked only as a browser ticks it ("on"); any other value sent is refused, not guessed."""
        raw = self.data.get("accept_mismatch")
        if raw in (None, ""):
            return False
        if raw != "on":
            raise forms.ValidationError(gettext("tick the box or leave it; %(value)s is neither")
                                        % {"value": str(raw)[:40]})
        return True

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        target = cleaned.get("config") or cleaned.get("engine")
        if target is None:
            if not self.errors:
                self.add_error("config", gettext("choose the config the tool measured, or its engine"))
            return cleaned
        if not has_role(self.user, target.machine.team, Role.MEMBER):
            self.add_error(None, gettext("importing runs needs the member role in the config's team"))
        cleaned["target"] = target
        return cleaned


@login_required
def import_page(request: HttpRequest) -> HttpResponse:
    """GET: the form; POST: the file's levels stored as runs, or why nothing was."""
    form = ImportForm(request.user, request.POST or None, request.FILES or None,
                      initial={"config": request.GET.get("config", "")[:12]})
    done: Imported | None = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            done = import_file(upload.name, upload.read(), form.cleaned_data["target"], request.user, request,
                               accept_mismatch=form.cleaned_data["accept_mismatch"])
        except Mismatched as exc:
            form.add_error("file", mismatch_text(exc))
        except (Unreadable, NotStored) as exc:
            form.add_error("file", error_text(exc))
    status = 400 if request.method == "POST" and form.errors else 200
    return render(request, "runs/import.html", {"form": form, "done": done, "tools": TOOLS.values()},
                  status=status)


def mismatch_text(exc: Mismatched) -> str:
    """The refusal of a mismatched file in the reader's language, each mismatch with both sides."""
    what = "; ".join(error_text(m.sentence) for m in exc.mismatches)
    return gettext(REFUSED) % {"name": exc.name, "what": what}
