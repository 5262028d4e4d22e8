"""The JavaScript catalogue carries the translations of stored strings marked in Django-free code."""
from __future__ import annotations

import json

from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from engines.kinds import get as kind
from runs.core.telemetry_summary import NO_POWER_NOTE


def _catalogue(client, language: str) -> dict[str, str]:
    """The catalogue the page's scripts get, as the JSON object the view writes."""
    body = client.get(reverse("javascript-catalog"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    marker = "const newcatalog = "
    if marker not in body:  # English: the view writes no catalogue at all
        return {}
    return json.JSONDecoder().raw_decode(body[body.index(marker) + len(marker):])[0]


def test_it_gives_scripts_a_stored_notes_translation(client):
    with translation.override("ja"):
        expected = {text: gettext(text) for text in (NO_POWER_NOTE, kind("llama-server").cache_fix)}
    catalogue = _catalogue(client, "ja")
    assert {text: catalogue.get(text) for text in expected} == expected
    assert all(text != translated for text, translated in expected.items())


def test_it_keeps_the_scripts_own_strings_and_adds_nothing_in_english(client):
    japanese, english = _catalogue(client, "ja"), _catalogue(client, "en")
    assert japanese["decode (client), tok/s"] != "decode (client), tok/s"  # static/js's own
    assert english == {}
