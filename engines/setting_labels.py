"""The names a config's settings go by on its form and wherever a revision's changes are listed.

The model's own names for its fields (Django's default, field name with spaces), marked here
rather than as verbose names so the migrations stay as they are.
"""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _

SETTING_LABELS: dict[str, Any] = {
    "name": _("name"), "engine": _("engine"), "model": _("model"), "quantization": _("quantization"),
    "speculative_method": _("speculative method"), "draft_model": _("draft model"),
    "lookahead": _("lookahead"), "draft_n_min": _("draft n min"), "draft_p_min": _("draft p min"),
    "prefix_caching": _("prefix caching"), "context_length": _("context length"),
    "threads": _("threads"),
    "max_num_batched_tokens": _("max num batched tokens"),
    "attention_backend": _("attention backend"),
    "thinking": _("thinking"), "reasoning_effort": _("reasoning effort"),
    "reasoning_parser": _("reasoning parser"), "temperature": _("temperature"), "top_p": _("top p"),
    "top_k": _("top k"), "seed": _("seed"), "max_tokens": _("max tokens"),
    "extra_flags": _("extra flags"), "notes": _("notes"),
}
