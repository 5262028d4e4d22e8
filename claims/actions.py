"""What a person can do with claims from the pages: add one (a pasted or uploaded claim file, or a
Spark Arena recipe with its measured table), check one on an engine here, and check the shipped seed
claims on the demo's simulator.

Each goes through the same code as ``manage.py checkclaim``: claims.core.reading reads (and refuses,
naming the field), claims.intake.store_claim stores in one transaction, claims.checking.start_check
starts the check. A recipe pasted on the page becomes a claim file naming it, so it is read exactly
as a recipe beside a claim file on disk is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from claims.checking import start_check
from claims.core.arena_table import read_table
from claims.core.reading import read_claim_file
from claims.core.schema import ClaimRefused
from claims.intake import import_claim_path, store_claim
from claims.models import Check, Claim
from engines.models import Engine, EngineConfig
from measure.words import gettext_noop
from teams.models import Team

__all__ = [
    "SEED_ENGINES",
    "RecipeClaim",
    "SeedOutcome",
    "add_claim_text",
    "add_recipe_claim",
    "check_on",
    "check_seeds",
    "seed_files",
]

SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# A seed claim's engine kind -> the demo's simulated engine and config it is checked on (examples/demo.yaml).
SEED_ENGINES = {"ollama": ("sim-ollama", "sim-27b-q8-la12"), "llama-server": ("sim-llama", "sim-moe-mtp8")}
SEED_RUNS = 2


def add_claim_text(team: Team, name: str, text: str, user: Any) -> tuple[Claim, bool]:
    """A pasted or uploaded claim file stored as a claim of ``team``: (the claim, whether it is new).
    ClaimRefused names the field; a file naming a recipe is refused (upload the recipe instead)."""
    data = read_claim_file(_safe(name, "claim.yaml"), text)
    return store_claim(team, data, text, user)


@dataclass(frozen=True)
class RecipeClaim:
    """A Spark Arena recipe with its author's measured table, and the source the claim names."""

    recipe_name: str
    recipe_text: str
    table: str
    title: str
    url: str = ""
    author: str = ""
    hardware: str = ""
    bandwidth_gbps: float | None = None
    runs: int | None = None


def add_recipe_claim(team: Team, given: RecipeClaim, user: Any) -> tuple[Claim, bool]:
    """The claim the recipe and its table make, read as a claim file naming the recipe would be."""
    recipe_name = _safe(given.recipe_name, "recipe.yaml")
    figures = read_table(gettext_noop("the measured table"), given.table)
    if given.runs:
        for figure in figures:
            figure["runs"] = given.runs
    hardware: dict[str, Any] = {"name": given.hardware} if given.hardware else {}
    if given.bandwidth_gbps is not None:
        hardware["bandwidth_gbps"] = given.bandwidth_gbps
    source = {k: v for k, v in (("title", given.title), ("url", given.url), ("author", given.author)) if v}
    claim = {"source": source, "hardware": hardware, "recipe": recipe_name, "figures": figures}
    text = yaml.safe_dump({"claim": claim}, sort_keys=False, allow_unicode=True)
    data = read_claim_file("claim.yaml", text, lambda _ref: (recipe_name, given.recipe_text))
    return store_claim(team, data, text, user)


def _safe(name: str, default: str) -> str:
    """A file's name as shown in messages and stored: its last part, plain characters only."""
    cleaned = SAFE_NAME.sub("-", Path(name.replace("\\", "/")).name)[:100].strip(".-")
    return cleaned or default


def seed_files() -> list[Path]:
    """The shipped seed claims (examples/claims/*.yaml)."""
    return sorted((Path(settings.BASE_DIR) / "examples" / "claims").glob("*.yaml"))


@dataclass(frozen=True)
class SeedOutcome:
    """One seed claim and what checking it on the simulator gave: its check, or why there is none."""

    claim: Claim | None
    check: Check | None
    why: str = ""


def check_seeds(team: Team, engines: Any, user: Any) -> list[SeedOutcome]:
    """Each seed claim stored in ``team`` and checked on the demo's simulated engine of its engine kind
    (``engines``: the engines the user may run). A check on the simulator is the simulator's, never one
    of the real claim: the page and the JSON say so."""
    outcomes = []
    for path in seed_files():
        try:
            claim, _new = import_claim_path(path, team, user)
        except ClaimRefused as exc:
            outcomes.append(SeedOutcome(None, None, str(exc)))
            continue
        named = SEED_ENGINES.get(claim.engine_kind)
        engine = engines.filter(name=named[0], simulator=True).first() if named else None
        if engine is None:
            outcomes.append(
                SeedOutcome(claim, None, gettext_noop("no simulated engine of this kind in the demo"))
            )
            continue
        config = EngineConfig.objects.filter(engine=engine, name=named[1]).first() if named else None
        try:
            outcomes.append(
                SeedOutcome(
                    claim, start_check(claim, engine, config=config, repetitions=SEED_RUNS, user=user)
                )
            )
        except ValueError as exc:
            outcomes.append(SeedOutcome(claim, None, str(exc)))
    return outcomes


def check_on(claim: Claim, engine: Engine, config: EngineConfig | None, repetitions: int, user: Any) -> Check:
    """The page's "Check on…": the same start as ``manage.py checkclaim`` (ValueError says what stops it)."""
    return start_check(claim, engine, config=config, repetitions=repetitions, user=user)
