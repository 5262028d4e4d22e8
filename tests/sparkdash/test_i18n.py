"""The dashboard's language: English by default, Japanese where the browser or the header asks.

Exports stay in English whatever the reader's language, so scripts that read them do not break.
"""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.factories import EngineConfigFactory
from tests.runs.compare_helpers import speed_runs
from tests.untranslated import catalogue

pytestmark = pytest.mark.django_db


def nav(response) -> str:
    html = response.content.decode()
    return html[html.index("<nav>"):html.index("</nav>")]


def test_it_serves_english_when_the_browser_asks_for_nothing_else(alice_client):
    response = alice_client.get(reverse("runs:config-list"))
    assert '<html lang="en">' in response.content.decode()
    assert ">Configs</a>" in nav(response)


def test_it_follows_the_browsers_accept_language(alice_client):
    response = alice_client.get(reverse("runs:config-list"), HTTP_ACCEPT_LANGUAGE="ja,en;q=0.8")
    assert '<html lang="ja">' in response.content.decode()
    assert ">設定</a>" in nav(response) and ">Configs</a>" not in nav(response)


def test_it_remembers_the_language_chosen_in_the_header_over_the_browsers(alice_client):
    page = reverse("runs:config-list")
    choice = {"language": "en", "next": page}
    chosen = alice_client.post(reverse("set_language"), choice, HTTP_ACCEPT_LANGUAGE="ja")
    assert chosen.status_code == 302 and chosen["Location"] == page
    assert ">Configs</a>" in nav(alice_client.get(page, HTTP_ACCEPT_LANGUAGE="ja"))
    alice_client.post(reverse("set_language"), {"language": "ja", "next": page})
    assert ">設定</a>" in nav(alice_client.get(page))


def test_it_marks_the_current_language_in_the_switcher(alice_client):
    html = alice_client.get(reverse("runs:home"), HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    switcher = html[html.index('id="language-form"'):]
    assert 'value="ja" lang="ja"' in switcher and "日本語" in switcher and "English" in switcher
    assert 'data-language="ja" aria-current="true" disabled' in switcher


def test_it_serves_the_javascript_catalogue_in_the_readers_language(client):
    japanese = client.get(reverse("javascript-catalog"), HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    english = client.get(reverse("javascript-catalog")).content.decode()
    # A message the served catalogue holds as a key (not merely a word its code contains).
    some = next(ja for en, ja in catalogue().items() if f"{json.dumps(en)}: " in japanese)
    assert some.encode("unicode_escape").decode() in japanese or some in japanese
    assert "django.catalog" in english and some not in english


@pytest.mark.parametrize("export", [
    ("runs:list", {"format": "csv"}),
    ("runs:list", {"format": "json"}),
    ("runs:compare", {"format": "csv"}),
    ("runs:compare", {"format": "json"}),
    ("runs:metrics", {}),
])
def test_it_keeps_english_field_names_in_every_export(alice_client, export):
    name, query = export
    runs = speed_runs(EngineConfigFactory(name="fast"), 40.0, 41.0)
    if name == "runs:compare":
        query = query | {"runs": ",".join(str(r.pk) for r in runs)}
    english = alice_client.get(reverse(name), query)
    japanese = alice_client.get(reverse(name), query, HTTP_ACCEPT_LANGUAGE="ja")
    assert english.status_code == japanese.status_code == 200
    assert japanese.content == english.content
    assert not any(ja in japanese.content.decode() for ja in catalogue().values() if len(ja) > 1)
