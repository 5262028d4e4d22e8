"""A Spark Arena recipe (the community recipe registry's format, ``recipe_version: "2"``) read into a claim's
engine, settings and workload.

The recipe's ``runtime`` names the engine (``llama-cpp``, ``vllm``, ``sglang``, each also
``-distributed``), ``model`` and ``metadata.quantization`` the model, ``defaults`` its launch
settings (the speculative ones read into method and lookahead), ``command`` its flags, and
``benchmark`` (``pp``, ``tg``, ``concurrency``) the workload. What SparkDash cannot carry over is
kept as stated (``container``, ``mods``, ``env``, ``tensor_parallel``) for claims.core.carry to list
with its reason. A recipe named by a claim file is a path relative to that file's folder, never
absolute and never outside it (:func:`recipe_path`). Plain Python, no Django.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from claims.core.schema import ClaimData, ClaimRefused, load_yaml, refused
from measure.words import gettext_noop

__all__ = ["RUNTIMES", "apply_recipe", "read_recipe", "recipe_path"]

# A Spark Arena runtime -> SparkDash's engine kind.
RUNTIMES = {"llama-cpp": "llama-server", "vllm": "vllm", "sglang": "sglang"}
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


class Benchmark(BaseModel):
    model_config = ConfigDict(extra="allow")
    pp: list[int] = Field(default_factory=list)
    tg: list[int] = Field(default_factory=list)
    concurrency: list[int] = Field(default_factory=lambda: [1], min_length=1)


class Recipe(BaseModel):
    """The fields of a recipe SparkDash reads; the registry's others (executor_config...) pass."""

    model_config = ConfigDict(extra="allow")
    recipe_version: str
    model: str = Field(min_length=1, max_length=300)
    runtime: str
    container: str = ""
    min_nodes: int = Field(1, ge=1)
    max_nodes: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, Any] = Field(default_factory=dict)
    mods: list[Any] = Field(default_factory=list)
    command: str = ""
    benchmark: Benchmark | None = None

    @field_validator("recipe_version", mode="before")
    @classmethod
    def _version(cls, version: Any) -> str:
        if str(version) != "2":
            raise ValueError(f'SparkDash reads recipe_version "2", not {version!r}')
        return "2"

    @field_validator("runtime")
    @classmethod
    def _runtime(cls, runtime: str) -> str:
        if runtime.removesuffix("-distributed") not in RUNTIMES:
            known = ", ".join(f"{r}, {r}-distributed" for r in RUNTIMES)
            raise ValueError(f"unknown runtime {runtime!r}; known: {known}")
        return runtime


def recipe_path(claim_file: Path, reference: str) -> Path:
    """The recipe a claim file names: relative to the claim file's folder, and inside it.

    An absolute path, a ``..`` that leaves the folder, or a link out of it is refused.
    """
    pure = PurePosixPath(reference)
    folder = claim_file.resolve().parent
    if pure.is_absolute() or reference.startswith("~") or "\\" in reference:
        raise ClaimRefused(
            gettext_noop("%(name)s: claim.recipe: %(path)s must be relative to the claim file's folder"),
            name=claim_file.name,
            path=reference,
        )
    resolved = (folder / pure).resolve()
    if not resolved.is_relative_to(folder):
        raise ClaimRefused(
            gettext_noop("%(name)s: claim.recipe: %(path)s leaves the claim file's folder"),
            name=claim_file.name,
            path=reference,
        )
    return resolved


def read_recipe(name: str, text: str) -> Recipe:
    """The recipe's fields; ClaimRefused naming the field when the file is not a recipe SparkDash reads."""
    data = load_yaml(name, text)
    if not isinstance(data, dict):
        raise ClaimRefused(gettext_noop("%(name)s: not a Spark Arena recipe (a YAML mapping)"), name=name)
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        raise refused(name, exc) from None


def apply_recipe(claim: ClaimData, recipe: Recipe, name: str, text: str) -> None:
    """Fill the claim's engine, model, settings and workload from the recipe (the claim keeps the rest)."""
    base = recipe.runtime.removesuffix("-distributed")
    claim.engine_kind, claim.model = RUNTIMES[base], recipe.model
    claim.quantization = str(recipe.metadata.get("quantization") or recipe.metadata.get("model_dtype") or "")
    claim.speculative_method, claim.lookahead = speculative(recipe.defaults)
    claim.nodes = max(claim.nodes, recipe.min_nodes)
    claim.extra_flags = command_flags(recipe.command, recipe.defaults)
    claim.launch_settings = {
        "defaults": recipe.defaults,
        "runtime": recipe.runtime,
        "container": recipe.container,
        "mods": recipe.mods,
        "env": recipe.env,
    }
    if recipe.benchmark is not None:
        bench = recipe.benchmark
        claim.prompt_tokens = bench.pp[0] if bench.pp else None
        claim.output_tokens = bench.tg[0] if bench.tg else None
        claim.concurrency_levels = sorted(set(bench.concurrency))
    claim.recipe_name, claim.recipe_text = name, text


def speculative(defaults: dict[str, Any]) -> tuple[str, int | None]:
    """(speculative method, lookahead) from a recipe's defaults, as each runtime's recipes name them."""
    if defaults.get("speculative_algorithm"):  # SGLang: steps drafted per verification
        steps = defaults.get("speculative_num_steps") or defaults.get("speculative_num_draft_tokens")
        return str(defaults["speculative_algorithm"]), _int(steps)
    config = defaults.get("speculative_config")
    if config:  # vLLM: a JSON object
        try:
            parsed = json.loads(config) if isinstance(config, str) else dict(config)
        except (ValueError, TypeError):
            return "", None
        return str(parsed.get("method", "")), _int(parsed.get("num_speculative_tokens"))
    method = defaults.get("spec_type") or defaults.get("speculative_method") or ""
    return str(method), _int(defaults.get("draft_max") or defaults.get("lookahead"))


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def command_flags(command: str, defaults: dict[str, Any]) -> list[str]:
    """The command template's flags that no default fills (``--trust-remote-code``, ``--page-size 64``).

    A flag whose value is a ``{placeholder}`` is one of the recipe's defaults, read from there; the
    program and the model path (the first tokens, before any flag) are SparkDash's to choose.
    """
    try:
        tokens = shlex.split(command.replace("\\\n", " "))
    except ValueError:
        return []
    flags: list[str] = []
    for position, token in enumerate(tokens):
        if not token.startswith("-") or PLACEHOLDER.search(token):
            continue
        following = tokens[position + 1] if position + 1 < len(tokens) else ""
        if following and not following.startswith("-"):
            if PLACEHOLDER.search(following):
                continue
            flags += [token, following]
        else:
            flags.append(token)
    return flags
