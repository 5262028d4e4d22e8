"""engines.recipes.field_words: the launch checks name a setting by its form's label, never its field."""
from __future__ import annotations

import pytest
from django.utils import translation

from engines.forms import EngineConfigForm
from engines.models import EngineConfig
from engines.recipes.field_words import FIELD_WORDS, field_of, field_words
from engines.templatetags.engine_words import words

pytestmark = pytest.mark.backend_free


def form_label(field: str) -> str:
    label = EngineConfigForm._meta.labels.get(field) or EngineConfig._meta.get_field(field).verbose_name
    return str(label)


def test_it_names_each_setting_as_its_form_labels_it_less_the_unit():
    with translation.override("en"):
        assert {field: w for field, w in FIELD_WORDS.items() if not form_label(field).startswith(w)} == {}


def test_it_reads_the_field_back_from_a_messages_leading_words():
    assert (field_of("draft model"), field_of("thinking budget"), field_of("KV-cache dtype")) == (
        "draft_model", "thinking_budget", "kv_cache_dtype")


def test_it_translates_the_words_where_shown():
    with translation.override("ja"):
        assert words(field_words("draft_model")) == "ドラフトモデル"
    assert field_words("speculative_method") == "speculative method"
