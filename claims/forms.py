"""The Claims pages' forms: a claim file pasted or uploaded, a Spark Arena recipe with its measured table,
and "Check on…" (an engine, a config, runs per level, and optionally every night).

Every field has a size limit; the text is read by claims.core (the same reading and refusals as
``manage.py checkclaim``), never run or passed on. Who may use the engine is checked here (member).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext, gettext_lazy

from claims.core.arena_table import MAX_TABLE_CHARS
from claims.core.schema import MAX_BYTES
from engines.access import visible
from engines.models import Engine, EngineConfig
from teams.models import Team
from teams.roles import Role, has_role, teams_with_role

__all__ = ["CheckForm", "ClaimFileForm", "RecipeForm"]

MAX_RUNS = 20


def _text_or_file(cleaned: dict[str, Any], text: str, upload: str, limit: int) -> str:
    """The pasted text, else the uploaded file's; ValidationError when neither, or too big, or not UTF-8."""
    pasted, given = cleaned.get(text) or "", cleaned.get(upload)
    if given is None:
        if not pasted.strip():
            raise forms.ValidationError(gettext("paste the file or upload it"))
        return str(pasted)
    if given.size > limit:
        raise forms.ValidationError(
            gettext("the file is %(size)s bytes; the limit is %(limit)s KiB")
            % {"size": f"{given.size:,}", "limit": limit >> 10}
        )
    try:
        return str(given.read().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise forms.ValidationError(gettext("the file is not UTF-8 text")) from None


class TeamForm(forms.Form):
    """A form that stores a claim in one of the teams where the user is a member."""

    team = forms.ModelChoiceField(queryset=Team.objects.none(), label=gettext_lazy("Team"))

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["team"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = teams_with_role(user, Role.MEMBER).order_by("name")
        if field.queryset.count() == 1:
            field.initial = field.queryset.first()


class ClaimFileForm(TeamForm):
    """A SparkDash claim file (docs/claims.md), pasted or uploaded."""

    text = forms.CharField(
        label=gettext_lazy("Claim file (YAML)"),
        required=False,
        max_length=MAX_BYTES,
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}),
    )
    file = forms.FileField(label=gettext_lazy("Or upload it"), required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.errors:
            try:
                cleaned["claim_text"] = _text_or_file(cleaned, "text", "file", MAX_BYTES)
            except forms.ValidationError as exc:
                self.add_error("text", exc)
        return cleaned


class RecipeForm(TeamForm):
    """A Spark Arena recipe (recipe_version 2), its author's measured table, and the claim's source."""

    title = forms.CharField(label=gettext_lazy("Title"), max_length=300)
    url = forms.URLField(
        label=gettext_lazy("Where it was published"), required=False, max_length=500, assume_scheme="https"
    )
    author = forms.CharField(label=gettext_lazy("Author"), required=False, max_length=200)
    recipe_text = forms.CharField(
        label=gettext_lazy("Recipe (YAML)"),
        required=False,
        max_length=MAX_BYTES,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
    )
    recipe_file = forms.FileField(label=gettext_lazy("Or upload the recipe"), required=False)
    table = forms.CharField(
        label=gettext_lazy("Measured table (Markdown)"),
        max_length=MAX_TABLE_CHARS,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text=gettext_lazy("the README's table: decode (t/s) and TTFT (ms) per concurrency (c1, c2...)"),
    )
    hardware = forms.CharField(
        label=gettext_lazy("Hardware"), required=False, max_length=100, initial="DGX Spark"
    )
    bandwidth_gbps = forms.FloatField(
        label=gettext_lazy("Its bandwidth (GB/s)"), required=False, min_value=0.1, max_value=100_000
    )
    runs = forms.IntegerField(
        label=gettext_lazy("Runs the table is over"), required=False, min_value=1, max_value=1000
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "recipe_text" not in self.errors and "recipe_file" not in self.errors:
            try:
                cleaned["recipe"] = _text_or_file(cleaned, "recipe_text", "recipe_file", MAX_BYTES)
            except forms.ValidationError as exc:
                self.add_error("recipe_text", exc)
        given = cleaned.get("recipe_file")
        cleaned["recipe_name"] = given.name if given is not None else "recipe.yaml"
        return cleaned


class CheckForm(forms.Form):
    """Check on…: the engine (and config) to check the claim on, runs per level, and every night."""

    engine = forms.ModelChoiceField(queryset=Engine.objects.none(), label=gettext_lazy("Engine"))
    config = forms.ModelChoiceField(
        queryset=EngineConfig.objects.none(),
        label=gettext_lazy("Config"),
        required=False,
        help_text=gettext_lazy(
            "whose model to run; the claim's settings go over it (default: the engine's only one)"
        ),
    )
    runs = forms.IntegerField(
        label=gettext_lazy("Runs per level"), min_value=1, max_value=MAX_RUNS, initial=3
    )
    nightly = forms.BooleanField(label=gettext_lazy("Check it again every night"), required=False)
    hour = forms.IntegerField(
        label=gettext_lazy("At (hour, UTC)"), min_value=0, max_value=23, initial=2, required=False
    )

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        engines = visible(user, Engine.objects.select_related("machine__team")).order_by("name")
        configs = visible(user, EngineConfig.objects.filter(archived=False)).order_by("name")
        for name, queryset in (("engine", engines), ("config", configs)):
            field = self.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = queryset

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        engine, config = cleaned.get("engine"), cleaned.get("config")
        if engine is None:
            return cleaned
        if config is not None and config.engine_id != engine.pk:
            self.add_error("config", gettext("this config is not of the engine chosen"))
        if not has_role(self.user, engine.machine.team, Role.MEMBER):
            self.add_error("engine", gettext("checking a claim needs the member role in the engine's team"))
        return cleaned
