"""Storing other tools' result files as runs: what `manage.py importruns` and the import page share.

Each level of a file (runs.core.imports) becomes one succeeded run of the "imported" job kind on
the config the user picked, its revision and machine, with the file's provenance. A file is
stored whole or not at all (one transaction), and a level already imported (the same file's
SHA-256 and level) adds nothing, so importing a file twice changes nothing. A file whose model,
engine or backend contradicts the config (runs.core.imports.match) is refused unless the user
accepts the mismatch; an accepted one is kept in each run's provenance, both sides named.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import DatabaseError, transaction
from django.http import HttpRequest
from django.utils import timezone

from engines import revisions
from engines.models import Engine, EngineConfig
from measure.words import gettext_noop
from runs.actions.import_alerts import check_import
from runs.core import registry
from runs.core.imports import TOOLS, Level, PeerFile
from runs.core.imports.detect import read_results
from runs.core.imports.match import Mismatch, Mismatched, Target, mismatches
from runs.core.jobs.imported.kind import JOB as IMPORTED
from runs.core.refusal import Refusal
from runs.models import Run
from teams import audit

__all__ = ["Imported", "NotStored", "config_from_file", "import_file", "mismatches_with"]

JOB = IMPORTED.name
NOT_STORED = gettext_noop("%(name)s, level %(level)s: the database refused the run (%(error)s). Nothing of "
                          "the file was stored.")


class NotStored(Refusal):
    """A level the database refused for another reason than its key existing: nothing of the file is
    stored, and the database's own words are kept."""


@dataclass(frozen=True)
class Imported:
    """What importing one file did: the runs it added, and how many levels were there already."""

    file: PeerFile
    added: list[Run]
    already: int


def import_file(
    name: str, data: bytes, target: EngineConfig | Engine, user: User | AnonymousUser | None = None,
    request: HttpRequest | None = None, accept_mismatch: bool = False,
) -> Imported:
    """Read `data` (a file called `name`) and store each level not imported before as a run.

    `target` is the config the tool measured, or the engine it measured, on which a config is
    made from the file's own metadata (config_from_file). Raises runs.core.imports.Unreadable for
    a file no reader knows, one cut short or one with an impossible figure; match.Mismatched for
    one that contradicts the target, unless `accept_mismatch`; NotStored for a level the database
    refused. Nothing is stored then. The caller checks that `user` may run on the target.
    """
    peer = read_results(name, data)
    found = mismatches_with(peer, target)
    if found and not accept_mismatch:
        raise Mismatched(name, found)
    digest = hashlib.sha256(data).hexdigest()
    actor = user if isinstance(user, User) else None
    with transaction.atomic():
        config = target if isinstance(target, EngineConfig) else config_from_file(peer, target)
        revision = revisions.record(config, actor)
        keys = [f"{digest}:{i}" for i in range(len(peer.levels))]
        known = set(Run.objects.filter(import_key__in=keys).values_list("import_key", flat=True))
        stored = [_store(peer, level, key, config, revision, actor, name, digest, found)
                  for key, level in zip(keys, peer.levels, strict=True) if key not in known]
        added = [run for run in stored if run is not None]
        for run in added:
            check_import(run)
        if added:
            audit.record(actor, "added", config, config.machine.team, request=request, what="imported runs",
                         file=name[:200], sha256=digest, tool=peer.tool, runs=[run.pk for run in added])
    return Imported(peer, added, len(peer.levels) - len(added))


def mismatches_with(peer: PeerFile, target: EngineConfig | Engine) -> list[Mismatch]:
    """How the file contradicts the config (its model, engine kind, backend), or the engine when a
    config is to be made from the file (its engine kind and backend only)."""
    engine = target.engine if isinstance(target, EngineConfig) else target
    config = target if isinstance(target, EngineConfig) else None
    return mismatches(peer, Target(
        config=config.name if config else "", model=config.model if config else "",
        quantization=config.quantization if config else "", engine=str(engine), kind=engine.kind,
        simulator=engine.simulator))


def config_from_file(peer: PeerFile, engine: Engine) -> EngineConfig:
    """The config named after the tool and the file's model on `engine` (made the first time): the
    model as the file names it, every other setting the config's defaults."""
    model = peer.model.strip() or "unknown model"
    name = f"{TOOLS[peer.tool]}: {model.rsplit('/', 1)[-1]}"[:100]
    config, _made = EngineConfig.objects.get_or_create(engine=engine, name=name,
                                                       defaults={"model": model[:300]})
    return config


def _store(
    peer: PeerFile, level: Level, key: str, config: EngineConfig, revision: Any, user: User | None,
    name: str, digest: str, accepted: list[Mismatch],
) -> Run | None:
    now = timezone.now()
    params = {"tool": peer.tool} | ({"concurrency": level.concurrency} if level.concurrency else {})
    summary = registry.get(JOB).stored(_summary(peer, level))
    provenance = {"imported_from": {
        "tool": peer.tool, "tool_label": TOOLS[peer.tool], "version": peer.version, "command": peer.command,
        "file": name[:200], "sha256": digest, "level": level.label, "model": peer.model,
        "backend": peer.backend, "base_url": peer.base_url, "measured_at": level.started,
        "by": user.get_username() if user else "", "at": now.isoformat(),
    } | ({"accepted_mismatch": [m.as_record() for m in accepted]} if accepted else {}),
        "config": revision.applied(config).snapshot()}  # what the run says it ran with, as SparkDash's do
    try:
        with transaction.atomic():
            return Run.objects.create(
                config=config, revision=revision, machine=config.machine, job=JOB, params=params,
                status=Run.Status.SUCCEEDED, created=now, started=now, finished=now, summary=summary,
                provenance=provenance, created_by=user, import_key=key,
                progress_done=level.attempted, progress_total=level.attempted,
            )
    except DatabaseError as exc:
        if Run.objects.filter(import_key=key).exists():  # imported at this moment by another request
            return None
        error = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise NotStored(NOT_STORED, name=name, level=level.label, error=error) from exc


def _summary(peer: PeerFile, level: Level) -> dict[str, Any]:
    return {
        **level.figures, "tool": peer.tool, "tool_version": peer.version, "concurrency": level.concurrency,
        "attempted": level.attempted,
        "failed_by_reason": level.failed_by_reason, "stated": level.stated, "notes": level.notes,
    }
