"""The reproduction report: Markdown to post back, one offline HTML file, and the JSON export."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from claims.report import html_report
from claims.results import check_view, markdown_report
from tests.claims.pages_helpers import finished_check, make_claim

pytestmark = pytest.mark.django_db


@pytest.fixture
def checked(alpha):
    claim = make_claim(alpha.team)
    return finished_check(claim, verdicts={"decode_tps@2": "lower"}, medians={"decode_tps@2": 40.0})


def test_it_writes_the_verdict_table_and_the_differences_in_markdown(checked):
    text = markdown_report(check_view(checked))
    assert text.startswith("## Reproduction report: Gemma on a Spark\n")
    assert "| `decode_tps` c2 | 50 tok/s | 40.0 | 39.2\u201340.8 | 3 | -20.0 % | **lower** |" in text
    assert "| **engine version and build** (differs) | b11434 | b12000 |" in text
    assert "| quantization | Q4_K_M | Q4_K_M |" in text


def test_it_writes_the_markdown_in_japanese(checked):
    text = markdown_report(check_view(checked), "ja")
    assert "再現" in text and "Reproduction report" not in text


def test_it_writes_one_html_file_that_links_to_nothing(checked):
    html = html_report(check_view(checked))
    assert (
        html.startswith("<!doctype html>")
        and '<script id="claim-chart-data" type="application/json">' in html
    )
    assert not re.search(r"""\b(src|href)\s*=|@import""", html)
    assert 'data-verdict="lower"' in html and '<tr data-prov="engine_version" class="differs">' in html


def test_it_downloads_each_format_and_refuses_others(client, alpha, checked):
    client.force_login(alpha.owner)
    url = lambda fmt: reverse("claims:report", args=[checked.claim_id, checked.pk, fmt])  # noqa: E731
    data = json.loads(client.get(url("json")).content)
    assert data["claim"] == checked.claim_id and data["figures"][1]["verdict"] == "lower"
    assert client.get(url("md"))["Content-Disposition"].endswith('.md"')
    assert client.get(url("html"), {"lang": "ja"}).content.decode().count('<html lang="ja">') == 1
    assert client.get(url("pdf")).status_code == 404
    assert client.get(url("html"), {"lang": "fr"}).status_code == 400
