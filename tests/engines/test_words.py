"""Words: English where stored or compared, the reader's language where a page shows it."""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext

from engines.recipes import render_config
from engines.templatetags.engine_words import words
from measure.words import Words, gettext_noop, marked
from tests.factories import EngineConfigFactory

UNRENDERED = "%(field)s (%(value)s) is not rendered: %(why)s"
WHY = "the weights of the base model decide it"


def test_words_is_its_english_text():
    note = Words("lookahead is 0: speculative decoding is off (%(types)s is not rendered)", types="ngram")
    assert note == "lookahead is 0: speculative decoding is off (ngram is not rendered)"
    assert note.params == {"types": "ngram"}


def test_the_filter_translates_the_template_and_its_words_but_keeps_identifiers():
    note = Words(UNRENDERED, field="quantization", value="Q4_K_M", why=Words(WHY))
    with translation.override("ja"):
        expected = gettext(UNRENDERED) % {"field": "quantization", "value": "Q4_K_M", "why": gettext(WHY)}
        assert words(note) == expected
    assert words(note) == note == "quantization (Q4_K_M) is not rendered: " + WHY


def test_a_recipe_refusal_keeps_its_template(db):
    config = EngineConfigFactory(engine__kind="vllm", speculative_method="bogus")
    recipe, reason = render_config(config)
    assert recipe is None and isinstance(reason, Words)
    assert reason.startswith("speculative method: 'bogus' is not a vLLM method")
    assert reason.text.startswith("speculative method: %(method)s is not a vLLM method")


def test_it_remembers_what_django_free_code_marked():
    label = "a label only this test marks"
    assert label not in marked()
    assert gettext_noop(label) == label
    assert label in marked()
