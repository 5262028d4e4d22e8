"""Config revisions: the settings a config had when a run ran, numbered and never changed.

Every saved change to a config's launch or request settings makes a new revision; renaming it
or editing its notes does not. A run records the revision it was queued with, and the worker
runs with that revision's settings, so editing a config never changes what an old run ran or
says, and "run again" repeats exactly what a run did.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.conf import settings as django_settings
from django.db import models, transaction

# A config is an engines.models.EngineConfig, which this module cannot name: engines.models imports
# it (ConfigRevision is one of engines' models), so naming it back, even for type hints only, would
# close an import circle. Functions that return their config say so with this; the others take Any.
Config = TypeVar("Config", bound=models.Model)

# Not settings: what the config is called, what it says of itself, and its bookkeeping.
NOT_SETTINGS = frozenset({"id", "engine", "name", "notes", "created", "updated", "archived"})


class ConfigRevision(models.Model):
    """One numbered state of a config's settings (launch and request), kept as it was."""

    config = models.ForeignKey("engines.EngineConfig", models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    settings = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(django_settings.AUTH_USER_MODEL, models.SET_NULL, null=True,
                                   blank=True, related_name="+")

    class Meta:
        ordering = ["config", "number"]
        constraints = [models.UniqueConstraint(fields=["config", "number"], name="one_number_per_revision")]

    def __str__(self) -> str:
        return f"{self.config.name} r{self.number}"

    @property
    def label(self) -> str:
        return f"r{self.number}"

    def applied(self, config: Config) -> Config:
        """A copy of ``config`` (never saved) carrying this revision's settings instead of its own."""
        copy = _copy(config)
        names = set(setting_names(config))
        for name, value in self.settings.items():
            if name in names:
                setattr(copy, name, value)
        return copy

    def changes_from(self, earlier: ConfigRevision | None) -> list[Change]:
        """What differs from ``earlier`` (None: nothing to compare with, so nothing changed)."""
        return [] if earlier is None else diff(earlier.settings, self.settings)


def _copy(config: Config) -> Config:
    copy = type(config)()
    copy.__dict__.update({k: v for k, v in config.__dict__.items() if k != "_state"})
    copy._state.adding, copy._state.db = False, config._state.db
    copy._state.fields_cache = dict(config._state.fields_cache)
    return copy


def setting_names(config: models.Model) -> list[str]:
    """The config's fields that are settings, in the form's order."""
    return [f.name for f in config._meta.concrete_fields if f.name not in NOT_SETTINGS]


def settings_of(config: models.Model) -> dict[str, Any]:
    """The config's current settings, as a revision stores them (each as its field reads it)."""
    fields = (f for f in config._meta.concrete_fields if f.name not in NOT_SETTINGS)
    return {f.name: f.to_python(getattr(config, f.name)) for f in fields}


Change = tuple[str, Any, Any]


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """(setting, before, after) for each setting that differs, in the order ``after`` lists them."""
    names = list(after) + [name for name in before if name not in after]
    return [(name, before.get(name), after.get(name)) for name in names
            if before.get(name) != after.get(name)]


def record(config: Any, user: Any = None) -> ConfigRevision:
    """The revision of the config's settings as stored: the latest, or a new one if they changed.

    Read from the database, not from ``config``: an instance loaded before an edit must not
    bring its old settings back as a new revision.
    """
    with transaction.atomic():
        # Locks the config's row, so two saves at once cannot both take the next number.
        current = settings_of(type(config).objects.select_for_update().get(pk=config.pk))
        latest = config.revisions.order_by("-number").first()
        if latest is not None and latest.settings == current:
            return latest
        number = 1 if latest is None else latest.number + 1
        by = user if getattr(user, "is_authenticated", False) else None
        return ConfigRevision.objects.create(config=config, number=number, settings=current, created_by=by)


def history(config: Any, most: int = 20) -> list[dict[str, Any]]:
    """The config's newest ``most`` revisions, newest first: each with its run count and what
    changed from the revision before it."""
    counted = config.revisions.select_related("created_by").annotate(run_count=models.Count("runs"))
    numbered = list(counted.order_by("-number")[:most + 1])
    shown = []
    for revision, earlier in zip(numbered, [*numbered[1:], None], strict=True):
        shown.append({"revision": revision, "changes": revision.changes_from(earlier)})
    return shown[:most]
