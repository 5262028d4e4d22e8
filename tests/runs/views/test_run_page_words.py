"""The run page's meta line and progress unit in the reader's language (issue 20)."""
from __future__ import annotations

import re

import pytest
from django.utils.html import escape

from runs.core import registry
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
PARAMS = {
    "replay": {"requests": [{}, {}], "reps": 2},
    "evalplus": {"suite": "humaneval", "limit": 5, "max_tokens": 768},
    "imported": {"tool": "guidellm", "concurrency": 4},
}


def _page(client, run, language: str) -> str:
    return client.get(run.get_absolute_url(), HTTP_ACCEPT_LANGUAGE=language).content.decode()


def _meta(html: str) -> str:
    return re.search(r'<p class="meta">(.*?)</p>', html, re.S).group(1)


@pytest.mark.parametrize("kind", list(registry.JOBS))
def test_it_words_each_kinds_parameters_in_japanese(alice_client, kind):
    spec = registry.JOBS[kind]
    params = PARAMS.get(kind) or {n: getattr(p, "default", None) for n, p in spec.params.items()}
    run = RunFactory(job=kind, params=params)
    english = escape(str(spec.params_text(params)))
    meta = _meta(_page(alice_client, run, "ja"))
    assert english not in meta and JAPANESE.search(meta), meta
    assert english in _meta(_page(alice_client, run, "en"))


def test_it_shows_the_progress_unit_in_japanese(alice_client):
    html = alice_client.get(RunFactory(job="mmlu-pro").get_absolute_url(), HTTP_ACCEPT_LANGUAGE="ja").content
    assert 'data-unit="問題"' in html.decode()
