"""Forms of the engines app: editing a config and starting a run of it."""
from __future__ import annotations

from django import forms

from engines.models import EngineConfig


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


class SpeedRunForm(forms.Form):
    """Parameters of a speed run; start_run validates them once more."""

    reps = forms.IntegerField(label="repetitions", min_value=1, max_value=50, initial=3)
    max_tokens = forms.IntegerField(label="max tokens per answer", min_value=1, max_value=131_072)
