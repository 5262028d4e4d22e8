"""Configs as code: upsert machines, engines and configs by name from a YAML file, all or nothing."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import yaml
from django.core.exceptions import ValidationError
from django.db import models, transaction

from engines.models import Engine, EngineConfig, Machine, Team
from teams import audit
from teams.changes import changed_fields, snapshot

MAX_FILE_BYTES = 1_000_000

MACHINE_KEYS = {"name", "team", "host", "bandwidth_gbps", "memory_gb", "notes"}
ENGINE_KEYS = {
    "name", "machine", "kind", "url", "api_key", "api_key_env", "simulator", "launch", "binary", "log_path",
    "merge_system_messages",
}  # fmt: skip
CONFIG_KEYS = {f.name for f in EngineConfig._meta.fields} - {"id", "created", "updated"}
# What each section's builder makes of one entry: the model, the entry's name, the field values.
Built = tuple[type[models.Model], str, dict[str, Any]]


class _NoAliasLoader(yaml.SafeLoader):
    """safe_load without aliases: `*name` repeats are how a YAML bomb multiplies itself."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed", mark)
        return super().compose_node(parent, index)


class ConfigFileError(Exception):
    """The file is not valid; the message names the entry and field. Nothing was written."""


def load_text(text: str) -> dict[str, int]:
    """Parse and apply a configs file; returns how many entries of each section were upserted."""
    if len(text.encode()) > MAX_FILE_BYTES:
        raise ConfigFileError(f"file is larger than {MAX_FILE_BYTES} bytes")
    try:
        data = yaml.load(text, Loader=_NoAliasLoader) or {}
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigFileError("top level must be a mapping with machines, engines and configs")
    _check_keys("top level", data, {"machines", "engines", "configs"})
    with transaction.atomic():
        counts = {
            "machines": _apply(data, "machines", MACHINE_KEYS, _machine),
            "engines": _apply(data, "engines", ENGINE_KEYS, _engine),
            "configs": _apply(data, "configs", CONFIG_KEYS, _config),
        }
    return counts


def _apply(data: dict, section: str, keys: set[str], build: Callable[[str, dict], Built]) -> int:
    entries = data.get(section) or []
    if not isinstance(entries, list):
        raise ConfigFileError(f"{section} must be a list")
    for i, entry in enumerate(entries):
        where = f"{section}[{i}]"
        if not isinstance(entry, dict) or not entry.get("name"):
            raise ConfigFileError(f"{where}: must be a mapping with a name")
        _check_keys(where, entry, keys)
        _save(where, *build(where, dict(entry)))
    return len(entries)


def _check_keys(where: str, entry: dict, known: set[str]) -> None:
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ConfigFileError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _save(where: str, model: type[models.Model], name: str, values: dict[str, Any]) -> None:
    obj = model._default_manager.filter(name=name).first() or model(name=name)
    before = snapshot(obj, values)
    for field, value in values.items():
        setattr(obj, field, value)
    try:
        obj.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ConfigFileError(f"{where} ({name}).{field}: {' '.join(messages)}") from None
    obj.save()
    _audit(obj, before)


def _audit(obj: models.Model, before: dict[str, Any]) -> None:
    """The load in the audit log, as the system's (an operator's command, not a person's page)."""
    team = obj.team if isinstance(obj, Machine) else obj.machine.team  # type: ignore[attr-defined]
    if not before:
        audit.record(None, "created", obj, team, via="loadconfigs")
    elif fields := changed_fields(before, obj):
        audit.record(None, "changed", obj, team, via="loadconfigs", fields=fields)


def _lookup(where: str, model: type[models.Model], name: Any) -> models.Model:
    found = model._default_manager.filter(name=name).first()
    if found is None:
        raise ConfigFileError(f"{where}: no {model.__name__.lower()} named {name!r}")
    return found


def _machine(where: str, entry: dict) -> Built:
    name = entry.pop("name")
    # A team is made when first named; a new machine with none joins the default team.
    if "team" in entry:
        entry["team"] = Team.objects.get_or_create(name=str(entry["team"]))[0]
    elif not Machine.objects.filter(name=name).exists():
        entry["team"] = Team.default()
    return Machine, name, entry


def _engine(where: str, entry: dict) -> Built:
    name = entry.pop("name")
    values = {
        "machine": _lookup(where, Machine, entry.get("machine")),
        "kind": entry.get("kind"),
        "base_url": entry.get("url"),
        "simulator": bool(entry.get("simulator", False)),
    }
    # Left out, these keep what the engine has (a new one: external, no binary, no log).
    kept = ("launch", "binary", "log_path", "merge_system_messages")
    values |= {key: entry[key] for key in kept if key in entry}
    if "api_key_env" in entry:
        variable = str(entry["api_key_env"])
        if variable not in os.environ:
            raise ConfigFileError(f"{where} ({name}).api_key_env: {variable} is not set")
        values["api_key"] = os.environ[variable]
    elif "api_key" in entry:
        values["api_key"] = entry["api_key"]
    return Engine, name, values


def _config(where: str, entry: dict) -> Built:
    name = entry.pop("name")
    entry["engine"] = _lookup(where, Engine, entry.get("engine"))
    return EngineConfig, name, entry
