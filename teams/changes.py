"""Which fields a save really changed, for the audit log's "changed" events.

A form's ``changed_data`` also names fields whose posted text differs from the initial value but
means the same (a blank pre-heat that becomes 0); comparing the saved values does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Model
from django.forms.models import model_to_dict

__all__ = ["changed_fields", "snapshot"]


def snapshot(obj: Model | None, fields: Iterable[str]) -> dict[str, Any]:
    """The values of ``fields`` on ``obj`` now (empty for a new object); many-to-many as pks."""
    if obj is None or obj.pk is None:
        return {}
    values = model_to_dict(obj, fields=list(fields))
    return {name: _plain(value) for name, value in values.items()}


def changed_fields(before: dict[str, Any], obj: Model) -> list[str]:
    """The names of the fields in ``before`` whose value on ``obj`` differs now, sorted."""
    after = snapshot(obj, before)
    return sorted(name for name in before if after.get(name) != before[name])


def _plain(value: Any) -> Any:
    if isinstance(value, list) and value and all(isinstance(item, Model) for item in value):
        return sorted(item.pk for item in value)  # many-to-many: the related objects
    return value
