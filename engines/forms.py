"""Forms of the engines app: editing a config (the form that starts a run of it is runs')."""
from __future__ import annotations

from typing import Any, cast

from django import forms

from engines.access import User, visible
from engines.models import Engine, EngineConfig

__all__ = ["EngineConfigForm"]

class EngineConfigForm(forms.ModelForm):
    """Every setting of a config; the model's validators bound each field."""

    class Meta:
        model = EngineConfig
        fields = [
            "name", "engine", "model", "quantization", "speculative_method", "draft_model",
            "lookahead", "draft_n_min", "draft_p_min", "kv_cache_dtype", "prefix_caching",
            "context_length", "parallel", "threads", "cache_ram_mib", "max_num_batched_tokens",
            "attention_backend", "moe_backend", "bytes_per_token_gb", "temperature", "top_p", "top_k", "seed",
            "max_tokens", "extra_flags", "notes",
        ]
        widgets = {
            "extra_flags": forms.Textarea(attrs={"rows": 2}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the user's teams' engines are offered; another team's posted pk is an invalid choice.
        field = cast("forms.ModelChoiceField[Engine]", self.fields["engine"])
        field.queryset = visible(user, Engine.objects.select_related("machine"))
