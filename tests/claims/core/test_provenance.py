"""The provenance diff's rule: stated values that disagree differ; an unstated side never does."""

import pytest

from claims.core.provenance import ROWS, compare_provenance, differs, shown
from measure.words import Words

pytestmark = pytest.mark.backend_free


def test_it_flags_only_values_both_sides_state_and_that_disagree():
    rows = {
        r.key: r
        for r in compare_provenance(
            {"engine_version": "b11434", "quantization": "Q4_K_M", "bandwidth_gbps": 273, "thinking": False},
            {"engine_version": "b12000", "quantization": "q4_k_m", "bandwidth_gbps": 255, "model_file": "x"},
        )
    }
    assert [key for key, _ in ROWS] == list(rows)
    assert rows["engine_version"].differs and not rows["quantization"].differs
    assert not rows["bandwidth_gbps"].differs  # within 10 %: the same class of machine
    assert not rows["thinking"].differs and rows["thinking"].here == "" and rows["thinking"].claim == "off"
    assert not rows["model_file"].differs


def test_it_compares_settings_key_by_key():
    assert differs({"method": "draft-mtp", "lookahead": 4}, {"method": "draft-mtp", "lookahead": 12})
    assert not differs({"method": "draft-mtp", "lookahead": None}, {"method": "draft_mtp", "lookahead": 12})
    assert differs(273, 200, 0.10) and not differs(0, 0.0)
    assert shown({"lookahead": 12, "method": "x"}) == "lookahead 12, method x"


def test_it_keeps_its_words_translatable_and_names_and_figures_as_they_are():
    from django.utils import translation

    from engines.templatetags.engine_words import words

    with translation.override("ja"):
        assert words(shown(False)) == "オフ" and words(shown(True)) == "オン"
        assert words(shown({"lookahead": 12, "thinking": False})) == "lookahead 12, thinking オフ"
        assert words(shown(["b11434", True])) == "b11434 / オン"
        # Settings the claim leaves unstated say nothing, not the list separator ("、").
        assert words(shown({"method": None, "lookahead": None})) == ""
        assert words(Words.joined(", ", [])) == ""
    assert shown(False) == "off"
    assert shown({"lookahead": 12, "thinking": False}) == "lookahead 12, thinking off"
