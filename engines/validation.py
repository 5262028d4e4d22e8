"""What a config's settings may not be, checked by the models' clean and validate_unique: launch
settings outside the allowlists, a name taken in the team, thinking settings that contradict
each other. The form, the admin and the YAML loader all reach these through the models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models
from django.utils.translation import gettext

from engines.recipes import LaunchSettings, render, settings_from_config
from engines.recipes.checks import launch_refusals
from engines.recipes.field_words import FIELD_WORDS, field_of
from engines.setting_labels import SETTING_LABELS
from engines.templatetags.engine_words import words

if TYPE_CHECKING:
    from teams.models import Team

__all__ = [
    "THINKING_BUDGET_MAX", "THINKING_BUDGET_MIN", "launch_errors", "recipe_errors", "refuse_name_in_team",
    "thinking_errors",
]

# A thinking budget below this leaves no room to reason; above it no engine's context holds it.
THINKING_BUDGET_MIN = 16
THINKING_BUDGET_MAX = 131_072


def launch_errors(config: Any) -> dict[str, str]:
    """What a config may not launch, by field: extra flags outside its kind's allowlist, a model path
    outside this machine's model directories (engines.recipes.checks, the check the worker repeats),
    and, on an engine SparkDash starts, settings its kind's launch recipe cannot honour (on an
    engine started by someone else, only a speculative method its kind does not have).

    :param config: an ``EngineConfig``, duck-typed: engines.models imports this module, so naming
        it here, even for type hints only, would close an import circle.
    """
    if config.engine_id is None:
        return {}  # the form says the engine is missing
    try:
        settings = settings_from_config(config)
    except ValueError:
        return {}  # an empty model: the field's own check says so
    errors = {field: _on_field(field, message) for field, message in launch_refusals(settings).items()}
    if not errors:
        errors = recipe_errors(settings, {f.name for f in config._meta.fields})
        if not config.engine.managed:
            # An engine started by someone else: its own draft model, flags and lengths are its
            # business, but a speculative method its kind does not have is a typo, said now.
            errors = {field: e for field, e in errors.items() if field == "speculative_method"}
    return errors


def recipe_errors(settings: LaunchSettings, fields: set[str]) -> dict[str, str]:
    """Why the kind's launch recipe refuses these settings, on the field its message names
    (on the whole form when it names none); empty when it renders."""
    try:
        render(settings)
    except ValueError as exc:
        message = exc.args[0] if exc.args else str(exc)
        field = field_of(str(message).partition(":")[0].strip())
        if field in fields:
            return {field: _on_field(field, message)}
        return {NON_FIELD_ERRORS: str(words(message))}
    return {}


def _on_field(field: str, message: Any) -> str:
    """The message as said on its field: without the setting's words in front (a check's message
    starts with its label, engines.recipes.field_words, in English or translated; the form puts the
    field's label there, the YAML loader its key)."""
    text = str(words(message))
    label = SETTING_LABELS.get(field)
    english = FIELD_WORDS.get(field, field)
    named = (field, field.replace("_", " "), english, gettext(english), *([str(label)] if label else []))
    for name in named:
        if text.startswith(f"{name}:"):
            return text[len(name) + 1:].lstrip()
    return text


def refuse_name_in_team(obj: models.Model, team_objects: models.QuerySet[Any], message: str,
                         team: Team) -> None:
    """Raise a ValidationError on ``name`` when another of ``team_objects`` has ``obj``'s name.

    Names are unique per team: only the team's own objects are looked at, so the error never
    tells a team that another team has the name. The database cannot say this (the team is
    two or three joins away), so forms, the admin and the YAML loader check it here.
    """
    name = getattr(obj, "name", "")
    if team_objects.filter(name=name).exclude(pk=obj.pk).exists():
        raise ValidationError({"name": message % {"name": name, "team": team.name}}, code="unique")


def thinking_errors(thinking: str, budget: int | None, effort: str) -> dict[str, str]:
    """What is wrong with a config's thinking settings, by field (empty: nothing)."""
    if thinking == "budget" and budget is None:
        return {"thinking_budget": gettext("thinking 'on, with a token budget' needs a budget "
                                           "(%(min)s-%(max)s tokens)")
                % {"min": THINKING_BUDGET_MIN, "max": THINKING_BUDGET_MAX}}
    if budget is not None and thinking != "budget":
        return {"thinking_budget": gettext("a budget is set, but thinking is not 'on, with a token budget'")}
    if effort and thinking == "off":
        return {"reasoning_effort": gettext("set, but thinking is off")}
    return {}
