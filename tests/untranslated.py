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
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
# A word of prose: letters only, set off by spaces (not a flag, a path, a model tag or a unit).
ENGLISH_WORD = re.compile(r"(?:(?<=\s)|^)[A-Za-z]{2,}[,.:;]?(?=\s|$)")

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
    """The catalogue strings (English) that `texts`, a Japanese page's texts, still show.

    Each hit is "English <- the text it was found in". A Japanese translation that keeps its
    English in brackets ("ドラフト最小長（draft n min）") does not count.
    """
    shown = set(texts)
    found = []
    for english, japanese in catalogue().items():
        pieces = fragments(english)
        if len(pieces) == 1 and pieces[0] in shown:
            found.append(f"{english} <- {pieces[0]}")
            continue
        sentences = [p for p in pieces if len(p.split()) >= WORDS_FOR_A_SENTENCE]
        for text in texts if sentences else ():
            bare = _without(text, fragments(japanese))
            if any(p in bare for p in sentences):
                found.append(f"{english} <- {text}")
                break
    return sorted(found)


def _without(text: str, pieces: list[str]) -> str:
    for piece in pieces:
        text = text.replace(piece, " ")
    return text


def english_sentences(texts: list[str]) -> list[str]:
    """Texts of three English words or more with no Japanese in them: likely never marked at all."""
    prose = (t for t in texts if not JAPANESE.search(t))
    return sorted({t for t in prose if len(ENGLISH_WORD.findall(t)) >= WORDS_FOR_A_SENTENCE})


def page_untranslated(driver: Any) -> list[str]:
    """The catalogue strings the page open in `driver` still shows in English."""
    return untranslated(list(driver.execute_script(PAGE_TEXTS_JS)))


def page_english(driver: Any) -> list[str]:
    """The page's texts that read as English prose (tests/untranslated.english_sentences)."""
    return english_sentences(list(driver.execute_script(PAGE_TEXTS_JS)))
