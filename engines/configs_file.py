"""Configs as code: upsert machines, engines and configs by name from a YAML file, all or nothing.

Engine and config names are unique per team, not across teams: a config is upserted by its name
among its engine's team's configs, an engine among its machine's team's engines. A file may say
whose it is with a top-level ``team:``; its machines then join that team and its ``engine:`` and
``machine:`` names are looked up in that team only. Without one, a name that more than one team
uses is refused with a request for ``team:``. Machine names are unique per team too: a machine
entry with a ``team:`` (its own or the file's) is upserted among that team's machines.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import yaml
from django.core.exceptions import ValidationError
from django.db import models, transaction

from engines.models import Engine, EngineConfig, Machine
from teams import audit
from teams.changes import changed_fields, snapshot
from teams.models import Team

MAX_FILE_BYTES = 1_000_000

MACHINE_KEYS = {"name", "team", "host", "bandwidth_gbps", "memory_gb", "notes"}
ENGINE_KEYS = {
    "name", "machine", "kind", "url", "api_key", "api_key_env", "simulator", "launch", "binary", "log_path",
    "merge_system_messages",
}  # fmt: skip
CONFIG_KEYS = {f.name for f in EngineConfig._meta.fields} - {"id", "created", "updated"}
# What each section's builder makes of one entry: the entry's name, the field values, and the
# rows an entry of that name updates (the team's, for engines and configs).
Built = tuple[str, dict[str, Any], models.QuerySet[Any]]
Builder = Callable[[str, dict, "Team | None"], Built]


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
    _check_keys("top level", data, {"team", "machines", "engines", "configs"})
    with transaction.atomic():
        team = Team.objects.get_or_create(name=str(data["team"]))[0] if data.get("team") else None
        counts = {
            "machines": _apply(data, "machines", MACHINE_KEYS, _machine, team),
            "engines": _apply(data, "engines", ENGINE_KEYS, _engine, team),
            "configs": _apply(data, "configs", CONFIG_KEYS, _config, team),
        }
    return counts


def _apply(data: dict, section: str, keys: set[str], build: Builder, team: Team | None) -> int:
    entries = data.get(section) or []
    if not isinstance(entries, list):
        raise ConfigFileError(f"{section} must be a list")
    for i, entry in enumerate(entries):
        where = f"{section}[{i}]"
        if not isinstance(entry, dict) or not entry.get("name"):
            raise ConfigFileError(f"{where}: must be a mapping with a name")
        _check_keys(where, entry, keys)
        _save(where, *build(where, dict(entry), team))
    return len(entries)


def _check_keys(where: str, entry: dict, known: set[str]) -> None:
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ConfigFileError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _save(where: str, name: str, values: dict[str, Any], scope: models.QuerySet[Any]) -> None:
    obj = scope.filter(name=name).first() or scope.model(name=name)
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


def _lookup(where: str, objects: models.QuerySet[Any], name: Any) -> Any:
    """The one object of ``objects`` named ``name``: refused when none or several (teams) are."""
    found = list(objects.filter(name=name)[:2])
    what = objects.model.__name__.lower()
    if not found:
        raise ConfigFileError(f"{where}: no {what} named {name!r}")
    if len(found) > 1:
        raise ConfigFileError(f"{where}: more than one team has {what}s named {name!r}: "
                              "say which team the file is for with a top-level team: NAME")
    return found[0]


def _machine(where: str, entry: dict, team: Team | None) -> Built:
    name = entry.pop("name")
    # A team is made when first named. Without one (the entry's or the file's), the one machine
    # of the name is updated, a new one joins the default team, and a name two teams use is refused.
    if "team" in entry:
        entry["team"] = Team.objects.get_or_create(name=str(entry["team"]))[0]
    elif team is not None:
        entry["team"] = team
    elif Machine.objects.filter(name=name).exists():
        entry["team"] = _lookup(where, Machine.objects.select_related("team"), name).team
    else:
        entry["team"] = Team.default()
    return name, entry, Machine.objects.filter(team=entry["team"])


def _engine(where: str, entry: dict, team: Team | None) -> Built:
    name = entry.pop("name")
    machines = Machine.objects.all() if team is None else Machine.objects.filter(team=team)
    machine = _lookup(where, machines, entry.get("machine"))
    values = {
        "machine": machine,
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
    return name, values, Engine.objects.filter(machine__team_id=machine.team_id)


def _config(where: str, entry: dict, team: Team | None) -> Built:
    name = entry.pop("name")
    engines = Engine.objects.all() if team is None else Engine.objects.filter(machine__team=team)
    engine = entry["engine"] = _lookup(where, engines.select_related("machine"), entry.get("engine"))
    return name, entry, EngineConfig.objects.filter(engine__machine__team_id=engine.machine.team_id)
