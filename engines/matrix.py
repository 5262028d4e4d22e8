"""The config matrix: one config per combination of a base config's axes, named predictably.

The axes are lookahead lengths, model files (a quantization label with its model path or tag),
speculative methods and engines. Every combination is a copy of the base config with those
settings, named `<base>-la<lookahead>-<quantization>-<method>-<engine>` (only the axes chosen).
A combination is refused when its config would not pass the config form's checks (the model's
validators) or renders no launch recipe; a name that already exists is skipped, never
overwritten. `plan` says what each combination would be; `create` saves the new ones.
"""
from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import capfirst
from django.utils.translation import gettext

from engines import revisions
from engines.models import Engine, EngineConfig
from engines.recipes import render_config
from engines.setting_labels import SETTING_LABELS
from engines.templatetags.engine_words import words

__all__ = ["MAX_COMBINATIONS", "Axes", "Combination", "ModelFile", "create", "plan"]

MAX_COMBINATIONS = 64
NAME_MAX = EngineConfig._meta.get_field("name").max_length or 100
NO_METHOD = "none"


@dataclass(frozen=True)
class ModelFile:
    """One model file of the matrix: its quantization label and the model path or tag the engine loads."""

    quantization: str
    model: str


@dataclass(frozen=True)
class Axes:
    """The values of each axis; an empty axis keeps the base config's setting (and adds no name part).

    A speculative method of "" (written "none") turns speculative decoding off.
    """

    lookaheads: Sequence[int] = ()
    model_files: Sequence[ModelFile] = ()
    methods: Sequence[str] = ()
    engines: Sequence[Engine] = ()

    def count(self) -> int:
        """How many combinations the axes make."""
        sizes = [len(axis) for axis in (self.lookaheads, self.model_files, self.methods, self.engines)]
        return 0 if not any(sizes) else math.prod(max(size, 1) for size in sizes)


@dataclass
class Combination:
    """One config of the matrix, not saved.

    `state` is "new", "exists" (skipped) or "refused"; `reason` says why it is not new.
    """

    config: EngineConfig
    state: str = "new"
    reason: str = ""
    existing: EngineConfig | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.config.name


def _part(text: str) -> str:
    """A name part: lower case, runs of anything but letters, digits, "_" and "." as one "-"."""
    return re.sub(r"[^a-z0-9_.]+", "-", text.strip().lower()).strip("-")


def _copy(base: EngineConfig, lookahead: int | None, model_file: ModelFile | None,
          method: str | None, engine: Engine | None) -> EngineConfig:
    """The base config with one combination's settings and its name (unsaved, no pk)."""
    config = EngineConfig(**{f.attname: getattr(base, f.attname) for f in EngineConfig._meta.concrete_fields})
    config.pk, parts = None, [base.name]
    if lookahead is not None:
        config.lookahead = lookahead
        parts.append(f"la{lookahead}")
    if model_file is not None:
        config.quantization, config.model = model_file.quantization, model_file.model
        parts.append(_part(model_file.quantization))
    if method is not None:
        config.speculative_method = "" if method == NO_METHOD else method
        parts.append(_part(method))
    if engine is not None:
        config.engine = engine
        parts.append(_part(engine.name))
    config.name = "-".join(parts)
    return config


def _combinations(base: EngineConfig, axes: Axes) -> list[EngineConfig]:
    """Every combination's config, the last axis varying fastest (lookahead, model file, method, engine)."""
    lookaheads: Sequence[int | None] = list(axes.lookaheads) or [None]
    model_files: Sequence[ModelFile | None] = list(axes.model_files) or [None]
    methods: Sequence[str | None] = list(axes.methods) or [None]
    engines: Sequence[Engine | None] = list(axes.engines) or [None]
    product = itertools.product(lookaheads, model_files, methods, engines)
    return [_copy(base, lookahead, model, method, engine) for lookahead, model, method, engine in product]


def _said_of(field: str, message: str) -> str:
    """The message after its setting's label, as the config form says it."""
    label = SETTING_LABELS.get(field)
    return f"{capfirst(str(label)) if label else field}: {message}"


def _refusal(config: EngineConfig) -> str:
    """Why this config may not be made (the config form's checks, then its launch recipe), or ""."""
    if len(config.name) > NAME_MAX:
        most = {"n": len(config.name), "most": NAME_MAX}
        return gettext("name: %(n)s characters, over the limit of %(most)s") % most
    try:
        config.full_clean(validate_unique=False)
    except ValidationError as exc:
        return "; ".join(_said_of(name, " ".join(errors)) for name, errors in exc.message_dict.items())
    recipe, reason = render_config(config)
    return "" if recipe is not None else gettext("no launch recipe: %(reason)s") % {"reason": words(reason)}


def _existing(combinations: Sequence[Combination]) -> dict[tuple[int, str], EngineConfig]:
    """The configs already named as a combination, by (team, name): names are unique per team,
    so only the team each combination would be made in is looked at, never another team's."""
    teams = {c.config.engine.machine.team_id for c in combinations}
    found = EngineConfig.objects.select_related("engine__machine").filter(
        engine__machine__team_id__in=teams, name__in={c.name for c in combinations})
    return {(c.engine.machine.team_id, c.name): c for c in found}


def plan(base: EngineConfig, axes: Axes) -> list[Combination]:
    """Each combination of the axes with what `create` would do with it.

    :raises ValueError: for no axis chosen, or more than MAX_COMBINATIONS combinations
    """
    count = axes.count()
    if not count:
        raise ValueError(
            gettext("axes: choose at least one lookahead, model file, speculative method or engine")
        )
    if count > MAX_COMBINATIONS:
        raise ValueError(
            gettext("axes: %(count)s combinations; the most one matrix makes is %(most)s")
            % {"count": count, "most": MAX_COMBINATIONS}
        )
    combinations = [Combination(config) for config in _combinations(base, axes)]
    names = Counter(c.name for c in combinations)
    existing, alike = _existing(combinations), _same_settings(combinations)
    for combination in combinations:
        key = (combination.config.engine.machine.team_id, combination.name)
        twin = alike.get(_settings_key(combination.config))
        if names[combination.name] > 1:
            combination.state = "refused"
            combination.reason = gettext("name: another combination has the same name")
        elif key in existing:
            combination.state, combination.existing = "exists", existing[key]
            combination.reason = gettext("a config of this name exists: skipped")
        elif reason := _refusal(combination.config):
            combination.state, combination.reason = "refused", reason
        elif twin is not None:
            combination.state, combination.existing = "exists", twin
            combination.reason = gettext("%(name)s has these settings already: reused") % {"name": twin.name}
    return combinations


def _settings_key(config: EngineConfig) -> tuple[int, str]:
    return config.engine_id, json.dumps(revisions.settings_of(config), sort_keys=True, default=str)


def _same_settings(combinations: Sequence[Combination]) -> dict[tuple[int, str], EngineConfig]:
    """The configs of the combinations' engines by their settings: a combination whose settings one
    of them has already (the base config itself, or one an earlier matrix made) reuses it."""
    engines = {c.config.engine_id for c in combinations}
    found = EngineConfig.objects.filter(engine_id__in=engines).order_by("pk")
    alike: dict[tuple[int, str], EngineConfig] = {}
    for config in found:
        alike.setdefault(_settings_key(config), config)
    return alike


def create(combinations: Sequence[Combination]) -> list[EngineConfig]:
    """Save the new combinations' configs (all in one transaction) and return them."""
    made = [c.config for c in combinations if c.state == "new"]
    with transaction.atomic():
        for config in made:
            config.save()
    return made
