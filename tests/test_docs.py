"""docs/metrics.md and docs/glossary.md are checked against the code: every figure a page shows is
defined in docs/metrics.md under its summary key, and every glossary entry's code name exists."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from measure import catalog
from runs.core import registry
from runs.templatetags.run_format import REASONING_METRICS, SUMMARY_METRICS

pytestmark = pytest.mark.backend_free

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_it_defines_every_figure_the_run_page_and_the_scorecards_show_in_metrics_md():
    text = (DOCS / "metrics.md").read_text(encoding="utf-8")
    shown = [m["key"] for m in SUMMARY_METRICS + REASONING_METRICS]
    scored = [m.key for m in registry.METRICS]
    missing = [key for key in shown + scored if f"`{key}`" not in text]
    assert missing == []


def test_it_keeps_the_metric_catalogue_in_metrics_md_as_the_code_declares_it():
    text = (DOCS / "metrics.md").read_text(encoding="utf-8")
    start, end = "<!-- metric-catalog:start -->\n", "<!-- metric-catalog:end -->"
    written = text[text.index(start) + len(start):text.index(end)]
    assert written == catalog.markdown_table(), "run: python -m runs.core.registry"


def test_it_names_only_code_that_exists_in_the_glossary():
    text = (DOCS / "glossary.md").read_text(encoding="utf-8")
    named = re.findall(r"`((?:engines|runs|teams|traffic)\.[a-z_.]+(?:\.[A-Z]\w+)?)`", text)
    assert len(named) >= 10
    for dotted in named:
        module, _, attribute = dotted.rpartition(".")
        if attribute[:1].isupper():
            assert hasattr(importlib.import_module(module), attribute), dotted
        else:
            importlib.import_module(dotted)


def test_it_gives_each_glossary_word_one_entry():
    words = re.findall(r"^\| \*\*([^*]+)\*\*", (DOCS / "glossary.md").read_text(encoding="utf-8"), re.M)
    assert len(words) == len(set(words)) > 30
