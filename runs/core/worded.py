"""A run's warning in words a page can translate: the English message, its template and figures.

A warning is stored as ``{"kind", "message", "text", "params", ...}`` (docs/i18n.md), "kind" holding
its code (a stored identifier: "throttled", "read-loop"; docs/glossary.md, code): "message" is
the English sentence that exports and tests read; "text" is the same sentence as a template marked
with ``gettext_noop`` (``%(name)s`` holes) and "params" fills it, so the run page can say it in the
reader's language. A param may itself be worded (a ``{"text", "params"}`` dict: a clause with its
own figures) or a list of such clauses, joined by LIST_SEPARATOR.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from measure.words import gettext_noop

LIST_SEPARATOR = gettext_noop(", ")


def worded(text: str, **params: Any) -> dict[str, Any]:
    """A clause: its marked template and the figures that fill it."""
    return {"text": text, "params": params}


def is_worded(value: Any) -> bool:
    """Whether `value` is a clause made by `worded` (as stored: a dict with "text" and "params")."""
    return isinstance(value, Mapping) and isinstance(value.get("text"), str) and "params" in value


def say(text: str, params: Mapping[str, Any], translate: Callable[[str], str] = str) -> str:
    """The sentence `text` filled with `params`, each template passed through `translate` first."""
    filled = {name: _said(value, translate) for name, value in params.items()}
    return translate(text) % filled


def _said(value: Any, translate: Callable[[str], str]) -> Any:
    if is_worded(value):
        return say(value["text"], value["params"], translate)
    if isinstance(value, list):
        return translate(LIST_SEPARATOR).join(str(_said(v, translate)) for v in value)
    return value


def warning(code: str, text: str, **params: Any) -> dict[str, Any]:
    """A run warning with `code`: its English message and the template and figures it was said from
    (the code is stored under "kind", as every stored warning has it)."""
    return {"kind": code, "message": say(text, params), "text": text, "params": params}


def both(first: Any, second: Any | None = None) -> Any:
    """One clause, or two joined by "and"."""
    if second is None:
        return first
    return worded(gettext_noop("%(first)s and %(second)s"), first=first, second=second)
