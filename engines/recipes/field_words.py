"""The words a config's settings go by in the launch checks' messages: the config form's labels.

A message names a setting as its form does ("draft model: set, but speculative method is empty"),
never by its field name: by the form's label (engines.setting_labels or the model's verbose name),
less any unit in brackets ("thinking budget", not "thinking budget (tokens)"); a test holds them so.
Plain Python, no Django.
"""
from __future__ import annotations

from measure.words import Words, gettext_noop

__all__ = ["FIELD_WORDS", "field_of", "field_words"]

# A setting whose name is one word (lookahead, threads) is named by it: field_words falls back to it.
FIELD_WORDS: dict[str, str] = {
    "model": gettext_noop("model"), "quantization": gettext_noop("quantization"),
    "speculative_method": gettext_noop("speculative method"), "draft_model": gettext_noop("draft model"),
    "draft_n_min": gettext_noop("draft n min"),
    "draft_p_min": gettext_noop("draft p min"), "kv_cache_dtype": gettext_noop("KV-cache dtype"),
    "prefix_caching": gettext_noop("prefix caching"), "context_length": gettext_noop("context length"),
    "threads": gettext_noop("threads"), "cache_ram_mib": gettext_noop("prompt cache RAM"),
    "max_num_batched_tokens": gettext_noop("max num batched tokens"),
    "attention_backend": gettext_noop("attention backend"), "moe_backend": gettext_noop("MoE backend"),
    "thinking_budget": gettext_noop("thinking budget"),
    "reasoning_parser": gettext_noop("reasoning parser"), "max_tokens": gettext_noop("max tokens"),
    "extra_flags": gettext_noop("extra flags"),
}


def field_words(field: str) -> Words:
    """The setting `field` as a message names it, translated where the message is shown."""
    return Words(FIELD_WORDS.get(field, field.replace("_", " ")))


def field_of(words: str) -> str:
    """The field a message's leading words name ("draft model" -> draft_model); the words with
    underscores for spaces when they are no form label."""
    found = next((field for field, label in FIELD_WORDS.items() if label == words), None)
    return found or words.replace(" ", "_")
