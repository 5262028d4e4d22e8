"""The JavaScript catalogue: Django's `djangojs` domain, plus the translation of every string that
Django-free code marked with `measure.words.gettext_noop` (stored labels and notes: an energy
note, an engine's cache fix). A script showing such a stored string calls `gettext(text)` on it,
as a template calls `{% translate text %}` (docs/i18n.md).
"""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from django.views.i18n import JavaScriptCatalog

from measure.words import marked


class DashboardCatalog(JavaScriptCatalog):
    """Django's JavaScript catalogue with the stored strings' translations added."""

    def get_catalog(self) -> dict[str, Any]:
        catalog = super().get_catalog()
        for text in marked():
            translated = gettext(text)
            if translated != text:
                catalog.setdefault(text, translated)
        return catalog
