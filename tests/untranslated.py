"""What a page in Japanese still shows in English: catalogue strings left untranslated.

The catalogue (locale/ja/LC_MESSAGES/*.mo) lists every English string the dashboard marks for
translation. A page rendered in Japanese should show none of them: where one appears as a whole
text or attribute, or a sentence of three words or more appears inside one, the page built that
text without translating it. Strings the Japanese keeps as they are (TTFT, tok/s) are skipped.
"""
from __future__ import annotations

import gettext
import re
from functools import cache
from pathlib import Path
from typing import Any

LOCALE = Path(__file__).resolve().parent.parent / "locale" / "ja" / "LC_MESSAGES"
# A placeholder in a catalogue string: %(name)s, %s, %d, %.1f, {name}.
PLACEHOLDER = re.compile(r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[sdfr%]|%[-#0 +]*\d*(?:\.\d+)?[sdfr]|\{\w*\}")
WORDS_FOR_A_SENTENCE = 3

# Every text node's text and every attribute a person reads, whitespace collapsed.
PAGE_TEXTS_JS = """
const texts = [];
const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const tag = node.parentElement ? node.parentElement.tagName : "";
  // Code, flags and identifiers stay as they are in Japanese.
  if (["SCRIPT", "STYLE", "CODE", "KBD", "PRE", "SAMP"].includes(tag)) continue;
  texts.push(node.textContent);
}
const read = ["title", "placeholder", "aria-label", "alt"];
for (const el of document.querySelectorAll("[title], [placeholder], [aria-label], [alt]")) {
  for (const name of read) if (el.hasAttribute(name)) texts.push(el.getAttribute(name));
}
for (const el of document.querySelectorAll("input[type=submit]")) texts.push(el.value);
for (const canvas of document.querySelectorAll("canvas")) {
  const chart = window.Chart && Chart.getChart(canvas);
  if (!chart) continue;
  for (const d of chart.data.datasets) texts.push(String(d.label || ""));
  for (const axis of Object.values(chart.options.scales || {})) {
    if (axis.title && axis.title.text) texts.push(String(axis.title.text));
  }
}
return texts.map((t) => t.replace(/\\s+/g, " ").trim()).filter((t) => t);
"""


@cache
def catalogue() -> dict[str, str]:
    """English -> Japanese for every string of both catalogues (plural forms by their singular)."""
    entries: dict[str, str] = {}
    for domain in ("django", "djangojs"):
        path = LOCALE / f"{domain}.mo"
        if not path.exists():
            continue
        with path.open("rb") as mo:
            found: dict[Any, str] = gettext.GNUTranslations(mo)._catalog  # type: ignore[attr-defined]
        for msgid, msgstr in found.items():
            english = msgid[0] if isinstance(msgid, tuple) else msgid
            if english and english != msgstr and "\x04" not in english:
                entries[english] = msgstr
    return entries


def fragments(english: str) -> list[str]:
    """The literal pieces of a catalogue string between its placeholders, whitespace collapsed."""
    pieces = (" ".join(p.split()) for p in PLACEHOLDER.split(english))
    return [p for p in pieces if p]


def untranslated(texts: list[str]) -> list[str]:
    """The catalogue strings (English) that `texts`, a Japanese page's texts, still show."""
    shown = set(texts)
    joined = "\n".join(texts)
    found = []
    for english in catalogue():
        pieces = fragments(english)
        whole = len(pieces) == 1 and pieces[0] in shown
        sentence = any(len(p.split()) >= WORDS_FOR_A_SENTENCE and p in joined for p in pieces)
        if whole or sentence:
            found.append(english)
    return sorted(found)


def page_untranslated(driver: Any) -> list[str]:
    """The catalogue strings the page open in `driver` still shows in English."""
    return untranslated(list(driver.execute_script(PAGE_TEXTS_JS)))
