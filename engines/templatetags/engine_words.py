"""The `words` filter: English that Django-free code stored, shown in the reader's language."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext, ngettext

from measure.words import Words

register = template.Library()


@register.filter
def words(value: object) -> object:
    """`Words` as `gettext(text) % params` (its figures translated too); other text through gettext."""
    if isinstance(value, Words):
        if not value:  # nothing to say (an empty list joined): not its separator, nor gettext("")'s header
            return ""
        if value.parts:
            return value.text.join(str(words(part)) for part in value.parts)
        # Only figures that are Words themselves are sentences; the rest (field names, values) stay.
        params = {k: words(v) if isinstance(v, Words) else v for k, v in value.params.items()}
        if value.many:
            return ngettext(value.text, value.many, int(params["n"])) % params  # type: ignore[call-overload]
        return gettext(value.text) % params if params else gettext(value.text)
    if isinstance(value, str) and value:
        return gettext(value)
    return value
