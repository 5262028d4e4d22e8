"""Storing other tools' result files as runs: what `manage.py importruns` and the import page share.

Each level of a file (runs.core.imports) becomes one succeeded run of the "imported" job kind on
the config the user picked, its revision and machine, with the file's provenance. A file is
stored whole or not at all (one transaction), and a level already imported (the same file's
SHA-256 and level) adds nothing, so importing a file twice changes nothing.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone

from engines import revisions
from engines.models import Engine, EngineConfig
from runs.actions.import_alerts import check_import
from runs.core import registry
from runs.core.imports import TOOLS, Level, PeerFile
from runs.core.imports.detect import read_results
from runs.core.jobs.imported.kind import JOB as IMPORTED
from runs.models import Run
from teams import audit

__all__ = ["Imported", "config_from_file", "import_file"]

JOB = IMPORTED.name


@dataclass(frozen=True)
class Imported:
    """What importing one file did: the runs it added, and how many levels were there already."""

    file: PeerFile
    added: list[Run]
    already: int


def import_file(
    name: str, data: bytes, target: EngineConfig | Engine, user: User | AnonymousUser | None = None,
    request: HttpRequest | None = None,
) -> Imported:
    """Read `data` (a file called `name`) and store each level not imported before as a run.

    `target` is the config the tool measured, or the engine it measured, on which a config is
    made from the file's own metadata (config_from_file). Raises runs.core.imports.Unreadable for
    a file no reader knows or one cut short; nothing is stored then. The caller checks that `user`
    may run on the target.
    """
    peer = read_results(name, data)
    digest = hashlib.sha256(data).hexdigest()
    actor = user if isinstance(user, User) else None
    with transaction.atomic():
        config = target if isinstance(target, EngineConfig) else config_from_file(peer, target)
        revision = revisions.record(config, actor)
        keys = [f"{digest}:{i}" for i in range(len(peer.levels))]
        known = set(Run.objects.filter(import_key__in=keys).values_list("import_key", flat=True))
        stored = [_store(peer, level, key, config, revision, actor, name, digest)
                  for key, level in zip(keys, peer.levels, strict=True) if key not in known]
        added = [run for run in stored if run is not None]
        for run in added:
            check_import(run)
        if added:
            audit.record(actor, "added", config, config.machine.team, request=request, what="imported runs",
                         file=name[:200], sha256=digest, tool=peer.tool, runs=[run.pk for run in added])
    return Imported(peer, added, len(peer.levels) - len(added))


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
    name: str, digest: str,
) -> Run | None:
    now = timezone.now()
    params = {"tool": peer.tool} | ({"concurrency": level.concurrency} if level.concurrency else {})
    summary = registry.get(JOB).stored(_summary(peer, level))
    provenance = {"imported_from": {
        "tool": peer.tool, "tool_label": TOOLS[peer.tool], "version": peer.version, "command": peer.command,
        "file": name[:200], "sha256": digest, "level": level.label, "model": peer.model,
        "backend": peer.backend, "base_url": peer.base_url, "measured_at": level.started,
        "by": user.get_username() if user else "", "at": now.isoformat(),
    }, "config": revision.applied(config).snapshot()}  # what the run says it ran with, as SparkDash's do
    try:
        with transaction.atomic():
            return Run.objects.create(
                config=config, revision=revision, machine=config.machine, job=JOB, params=params,
                status=Run.Status.SUCCEEDED, created=now, started=now, finished=now, summary=summary,
                provenance=provenance, created_by=user, import_key=key,
                progress_done=level.attempted, progress_total=level.attempted,
            )
    except IntegrityError:  # imported at the same moment by another request: that one stands
        return None


def _summary(peer: PeerFile, level: Level) -> dict[str, Any]:
    return {
        **level.figures, "tool": peer.tool, "tool_version": peer.version, "concurrency": level.concurrency,
        "attempted": level.attempted,
        "failed_by_reason": level.failed_by_reason, "stated": level.stated, "notes": level.notes,
    }
