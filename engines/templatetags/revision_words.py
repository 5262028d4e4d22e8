"""How a config revision's settings and their changes read on a page."""
from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext

from engines.setting_labels import SETTING_LABELS

register = template.Library()


@register.filter
def setting_label(name: str) -> str:
    """A setting's name as its form labels it (translated), else its field name in words."""
    label = SETTING_LABELS.get(name)
    return str(label) if label is not None else name.replace("_", " ")


@register.filter
def setting_value(value: Any) -> str:
    """A setting's value as a reader wants it: "engine default" for none, on/off for yes/no."""
    if value is None or value == "":
        return gettext("engine default")
    if isinstance(value, bool):
        return gettext("on") if value else gettext("off")
    return str(value)
