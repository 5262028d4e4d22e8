"""Storing a claim: a claim file (with its recipe), or another tool's result file, as one claim of a team.

The file is read whole first (claims.core.reading: a malformed one is refused naming the field), then
the claim and its figures are written in one transaction, so a refusal stores nothing. The same content
twice is one claim (its SHA-256, unique per team); a saved claim never changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction

from claims.core.reading import read_claim_file, read_result_file
from claims.core.recipe import recipe_path
from claims.core.schema import ClaimData, ClaimRefused, FigureData
from claims.models import Claim, ClaimedFigure
from measure.words import gettext_noop
from teams.models import Team

__all__ = ["as_data", "import_claim_path", "store_claim"]

RECIPE_MAX_BYTES = 1024 * 1024


def import_claim_path(path: Path, team: Team, user: Any = None) -> tuple[Claim, bool]:
    """The claim the file at ``path`` states (a claim file, else a result file another tool wrote):
    (the claim, whether it is new). ClaimRefused names the field of a malformed file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ClaimRefused(
            gettext_noop("cannot read %(name)s: %(error)s"), name=path.name, error=exc.strerror or str(exc)
        ) from None
    text = raw.decode("utf-8-sig", errors="replace")
    if _is_claim_file(text):
        data = read_claim_file(path.name, text, lambda ref: _read_recipe(path, ref))
    else:
        data = read_result_file(path.name, raw)
    return store_claim(team, data, text, user)


def _is_claim_file(text: str) -> bool:
    """A SparkDash claim file starts its mapping with ``claim:`` (after comments)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped.startswith("claim:")
    return False


def _read_recipe(claim_file: Path, reference: str) -> tuple[str, str]:
    path = recipe_path(claim_file, reference)
    try:
        if path.stat().st_size > RECIPE_MAX_BYTES:
            raise ClaimRefused(
                gettext_noop("%(name)s: claim.recipe: %(path)s is larger than 1 MiB"),
                name=claim_file.name,
                path=reference,
            )
        return reference, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ClaimRefused(
            gettext_noop("%(name)s: claim.recipe: cannot read %(path)s"), name=claim_file.name, path=reference
        ) from None


def store_claim(team: Team, data: ClaimData, text: str, user: Any = None) -> tuple[Claim, bool]:
    """The claim and its figures, written in one transaction; the team's claim of the same content
    when there is one: (the claim, whether it is new)."""
    digest = hashlib.sha256((text + "\0" + data.recipe_text).encode()).hexdigest()
    known = Claim.objects.filter(team=team, sha256=digest).first()
    if known is not None:
        return known, False
    fields = {f.name: getattr(data, f.name) for f in dataclasses.fields(data) if f.name != "figures"}
    try:
        with transaction.atomic():
            claim = Claim.objects.create(
                team=team, sha256=digest, text=text, created_by=_user(user), **fields
            )
            ClaimedFigure.objects.bulk_create(
                ClaimedFigure(claim=claim, **dataclasses.asdict(figure)) for figure in data.figures
            )
    except IntegrityError:
        # Only the same file stored at the same moment by another request is a duplicate here.
        known = Claim.objects.filter(team=team, sha256=digest).first()
        if known is None:
            raise
        return known, False
    return claim, True


def _user(user: Any) -> Any:
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def as_data(claim: Claim) -> ClaimData:
    """A stored claim as the plain-Python core reads it (carry-over, plausibility)."""
    names = {f.name for f in dataclasses.fields(ClaimData)} - {"figures"}
    figures = [
        FigureData(f.metric, f.concurrency, f.value, f.unit, f.aggregate, f.runs, f.spread, f.note)
        for f in claim.figures.all()
    ]
    return ClaimData(figures=figures, **{name: getattr(claim, name) for name in names})
