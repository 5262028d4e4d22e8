"""tests/untranslated.py, the Japanese browser test's eye: what it counts as left in English."""
from __future__ import annotations

import re

import pytest

from engines.models import EngineConfig
from tests.untranslated import PLACEHOLDER, catalogue, english_sentences, untranslated

pytestmark = pytest.mark.backend_free


def test_it_flags_a_catalogue_string_shown_whole_and_passes_its_translation():
    assert catalogue()["Configs"] == "設定"
    assert untranslated(["Configs"]) == ["Configs <- Configs"]
    assert untranslated(["設定", "TTFT", "sim-ja"]) == []


def test_it_flags_an_english_sentence_inside_a_japanese_text():
    shown = "設定: acceptance at draft position 2"
    assert untranslated([shown]) == [f"acceptance at draft position %(n)s <- {shown}"]


def test_it_passes_a_translation_that_keeps_its_english_in_brackets():
    japanese = catalogue()["draft n min"]
    assert "draft n min" in japanese and untranslated([japanese]) == []


def test_it_lists_english_prose_but_not_names_flags_or_japanese():
    texts = ["3 repetitions, 256 max tokens", "sim-ja", "--spec-draft-n-max 8", "デコード (client) tok/s"]
    assert english_sentences(texts) == ["3 repetitions, 256 max tokens"]


# The engine's own request parameter, named as the engine reads it (not a config field's name).
API_NAMES = {"reasoning_effort"}


def test_it_names_no_config_setting_by_its_internal_name_in_japanese():
    internal = {f.name for f in EngineConfig._meta.fields if "_" in f.name} - API_NAMES
    named = {english: sorted(name for name in internal if re.search(rf"(?<![\w-]){name}(?!\w)",
                                                                   PLACEHOLDER.sub("", japanese)))
             for english, japanese in catalogue().items()}
    assert {english: names for english, names in named.items() if names} == {}


# A value quoted in a message ('draft_model', vLLM's method of that name), which is no field's name.
QUOTED = re.compile(r"'[^']*'")


def config_field_names() -> set[str]:
    """The config's fields whose names are no words (draft_model), so never shown to a person."""
    return {f.name for f in EngineConfig._meta.fields if "_" in f.name} - API_NAMES


def named_fields(text: str) -> list[str]:
    """The config field names `text` says, leaving out its placeholders and quoted values."""
    bare = QUOTED.sub("", PLACEHOLDER.sub("", text))
    return sorted(name for name in config_field_names() if re.search(rf"(?<![\w-]){name}(?!\w)", bare))


def test_it_finds_a_config_field_name_but_not_a_quoted_value():
    assert named_fields("draft_model: set, but %(draft_model)s") == ["draft_model"]
    assert named_fields("draft model: set (use 'draft_model') with --speculative-draft-model-path") == []


def test_it_names_no_config_setting_by_its_internal_name_in_english():
    named = {english: named_fields(english) for english in catalogue()}
    assert {english: names for english, names in named.items() if names} == {}
