"""Ids that users type: what counts as a key, so that a number too big for the database is an
unknown id (a 404, a filter that matches nothing, a form's invalid choice) and never reaches a
query (a 500).
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

__all__ = ["MAX_KEY", "KeysChoiceField", "parse_key"]

# Every primary key is a BigAutoField (settings.DEFAULT_AUTO_FIELD): a signed 64-bit integer.
MAX_KEY = 2**63 - 1
# Enough digits for MAX_KEY, so int() never reads an arbitrarily long string.
MAX_DIGITS = len(str(MAX_KEY))


def parse_key(text: str) -> int | None:
    """The key `text` names (ASCII digits, 1..MAX_KEY), or None when it can name no row."""
    text = text.strip()
    if not text or len(text) > MAX_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    key = int(text)
    return key if 1 <= key <= MAX_KEY else None


class KeysChoiceField(forms.ModelMultipleChoiceField):
    """A multiple choice of rows that refuses a value no row can have before Django's `pk__in`
    query sends it to the database (an OverflowError on SQLite, a DataError on Postgres)."""

    def clean(self, value: Any) -> Any:
        for pk in value if isinstance(value, list | tuple) else ():
            if not self.to_field_name and parse_key(str(pk)) is None:
                raise ValidationError(self.error_messages["invalid_pk_value"], code="invalid_pk_value",
                                      params={"pk": pk})
        return super().clean(value)
