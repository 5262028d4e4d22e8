"""tests/untranslated.py, the Japanese browser test's eye: what it counts as left in English."""
from __future__ import annotations

import pytest

from tests.untranslated import catalogue, english_sentences, untranslated

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
