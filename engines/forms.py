"""Forms of the engines app: editing a config and a config matrix's axes (the form that starts a run
of a config is runs')."""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from engines.access import User, visible
from engines.ids import KeysChoiceField
from engines.matrix import Axes, ModelFile
from engines.models import Engine, EngineConfig
from engines.recipes import method_choices
from engines.setting_labels import SETTING_LABELS
from teams.roles import Role, teams_with_role

__all__ = ["EngineConfigForm", "MatrixForm"]


def member_engines(user: User, engines: QuerySet[Engine]) -> QuerySet[Engine]:
    """The engines among ``engines`` on teams where ``user`` holds the member role or more."""
    return visible(user, engines).filter(machine__team__in=teams_with_role(user, Role.MEMBER))


class EngineConfigForm(forms.ModelForm):
    """Every setting of a config; the model's validators bound each field."""

    class Meta:
        model = EngineConfig
        fields = [
            "name", "engine", "model", "quantization", "speculative_method", "draft_model",
            "lookahead", "draft_n_min", "draft_p_min", "kv_cache_dtype", "prefix_caching",
            "context_length", "parallel", "threads", "cache_ram_mib", "max_num_batched_tokens",
            "attention_backend", "moe_backend", "bytes_per_token_gb", "thinking", "thinking_budget",
            "reasoning_effort", "reasoning_parser", "temperature", "top_p", "top_k", "seed",
            "max_tokens", "preheat_s", "extra_flags", "notes",
        ]
        labels = SETTING_LABELS
        # Shown beside the fields (the model's own help texts stay, so the migrations do too).
        help_texts = {
            "model": _("a model name inside the machine's model directories, a hub id (org/name) or an "
                       "Ollama tag; a path elsewhere is refused"),
            "extra_flags": _("only the engine kind's allowed flags (listed in the README), as --flag value "
                             "or --flag=value; Ollama: NAME=value settings"),
        }
        widgets = {
            "extra_flags": forms.Textarea(attrs={"rows": 2}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the engines of teams where the user may change configs (member role) are offered;
        # another team's posted pk is an invalid choice.
        field = cast("forms.ModelChoiceField[Engine]", self.fields["engine"])
        field.queryset = member_engines(user, Engine.objects.select_related("machine"))
        self.fields["preheat_s"].required = False  # left out: off
        # The speculative methods each engine's kind takes, offered as the field's suggestions
        # (method_choices.js follows the chosen engine); the recipe's check refuses others.
        self.engine_kinds = {engine.pk: engine.kind for engine in field.queryset}
        self.method_lists = {kind: method_choices(kind) for kind in sorted(set(self.engine_kinds.values()))}
        engine_id = self.initial.get("engine") or self.instance.engine_id
        chosen = self.engine_kinds.get(engine_id) if engine_id is not None else None
        self.fields["speculative_method"].widget.attrs["list"] = f"methods-{chosen or 'none'}"

    def clean_preheat_s(self) -> int:
        """A blank pre-heat is 0 (off), as the model's default."""
        return self.cleaned_data.get("preheat_s") or 0


MODEL_FILES_EXAMPLE = "Q4_K_M /models/qwen3-Q4_K_M.gguf\nQ8_0 /models/qwen3-Q8_0.gguf"


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.replace("\n", ",").split(",") if item.strip()]


class MatrixForm(forms.Form):
    """The axes of a config matrix (engines.matrix); a blank axis keeps the base config's setting."""

    lookaheads = forms.CharField(
        label=_("lookahead lengths"), required=False, max_length=200,
        widget=forms.TextInput(attrs={"placeholder": _("e.g. 0,4,8")}),
        help_text=_("comma-separated draft tokens per verification, each 0–64"),  # noqa: RUF001 (an en dash; a \u escape would not match the catalogue)
    )
    model_files = forms.CharField(
        label=_("model files"), required=False, max_length=4000,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": MODEL_FILES_EXAMPLE}),
        help_text=_("one a line: a quantization label, a space, then the model path or tag"),
    )
    methods = forms.CharField(
        label=_("speculative methods"), required=False, max_length=300,
        widget=forms.TextInput(attrs={"placeholder": _("e.g. none,draft-mtp")}),
        help_text=_("comma-separated; none turns speculative decoding off"),
    )
    engines = KeysChoiceField(
        queryset=Engine.objects.none(), required=False, widget=forms.SelectMultiple(attrs={"size": 4}),
        label=_("engines"), help_text=_("none chosen: the base config's engine"),
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast("forms.ModelChoiceField[Engine]", self.fields["engines"])
        field.queryset = member_engines(user, Engine.objects.select_related("machine").order_by("name"))

    def clean_lookaheads(self) -> list[int]:
        values = []
        for item in _items(self.cleaned_data["lookaheads"]):
            if not item.isdigit() or not 0 <= int(item) <= 64:
                raise forms.ValidationError(
                    gettext("each lookahead must be a whole number 0–64, not %(item)s")  # noqa: RUF001
                    % {"item": repr(item)}
                )
            values.append(int(item))
        return list(dict.fromkeys(values))

    def clean_model_files(self) -> list[ModelFile]:
        files = []
        for line in filter(None, (line.strip() for line in self.cleaned_data["model_files"].splitlines())):
            label, _, model = line.partition(" ")
            if not model.strip():
                raise forms.ValidationError(
                    gettext("%(line)s: give a quantization label, a space, then the model")
                    % {"line": repr(line)}
                )
            files.append(ModelFile(label, model.strip()))
        return list(dict.fromkeys(files))

    def clean_methods(self) -> list[str]:
        return list(dict.fromkeys(_items(self.cleaned_data["methods"])))

    def axes(self) -> Axes:
        """The cleaned axes (call after is_valid())."""
        data = self.cleaned_data
        return Axes(data["lookaheads"], data["model_files"], data["methods"], list(data["engines"]))
