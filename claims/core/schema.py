"""The SparkDash claim file (docs/claims.md): its shape as pydantic models, and what a claim holds once read.

A file that does not fit is refused with a ClaimRefused naming the field (``claim.figures.1.metric``)
and what it should be; nothing of it is kept. Plain Python, no Django.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from claims.core.metrics import CLAIM_METRICS
from measure.words import gettext_noop
from runs.core.refusal import Refusal

__all__ = ["ClaimData", "ClaimFile", "ClaimRefused", "FigureData", "load_yaml", "refused"]

MAX_BYTES = 1024 * 1024


class ClaimRefused(Refusal):
    """A claim file, recipe or result file that cannot become a claim; nothing of it is stored."""


class Strict(BaseModel):
    """A part of the file whose unknown keys are refused (a misspelt key is named, not ignored)."""

    model_config = ConfigDict(extra="forbid")


class Source(Strict):
    title: str = Field(min_length=1, max_length=300)
    url: str = Field("", max_length=500, pattern=r"^(https?://\S+)?$")
    author: str = Field("", max_length=200)
    published: datetime.date | None = None


class Hardware(Strict):
    name: str = Field("", max_length=100)
    accelerator: str = Field("", max_length=100)
    bandwidth_gbps: float | None = Field(None, gt=0, le=100_000)
    memory_gb: float | None = Field(None, gt=0, le=100_000)
    nodes: int = Field(1, ge=1, le=1024)


class Engine(Strict):
    kind: str = Field(min_length=1, max_length=40)
    version: str = Field("", max_length=100)


class Model(Strict):
    name: str = Field("", max_length=300)
    quantization: str = Field("", max_length=50)
    bytes_per_token_gb: float | None = Field(None, gt=0, le=10_000)


class Settings(BaseModel):
    """Launch settings: the named ones, and any other (kept, then carried over or listed as not)."""

    model_config = ConfigDict(extra="allow")
    speculative_method: str = Field("", max_length=50)
    lookahead: int | None = Field(None, ge=0, le=64)
    extra_flags: list[str] = Field(default_factory=list, max_length=200)


class Workload(Strict):
    prompt_tokens: int | None = Field(None, ge=1, le=10_000_000)
    output_tokens: int | None = Field(None, ge=1, le=131_072)
    concurrency: list[int] = Field(default_factory=lambda: [1], min_length=1, max_length=20)
    context_depth: int | None = Field(None, ge=0, le=10_000_000)
    output_type: str = Field("", max_length=50)
    sampling: dict[str, float | int | str | bool | None] = Field(default_factory=dict)
    thinking: bool | None = None
    runs: int | None = Field(None, ge=1, le=1000)

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, levels: list[int]) -> list[int]:
        if any(not 1 <= c <= 100 for c in levels):
            raise ValueError("each concurrency level must be 1 to 100")
        return sorted(set(levels))


class Figure(Strict):
    metric: str
    concurrency: int = Field(1, ge=1, le=100)
    value: float
    runs: int | None = Field(None, ge=1, le=1000)
    spread: float | None = Field(None, ge=0)
    note: str = Field("", max_length=300)

    @field_validator("metric")
    @classmethod
    def _known(cls, metric: str) -> str:
        if metric not in CLAIM_METRICS:
            raise ValueError(f"unknown metric {metric!r}; a claim states one of {', '.join(CLAIM_METRICS)}")
        return metric

    @field_validator("value")
    @classmethod
    def _plausible(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"must be a finite number above 0, not {value}")
        return value


class Claim(Strict):
    source: Source
    hardware: Hardware = Field(default_factory=lambda: Hardware.model_validate({}))
    engine: Engine | None = None
    model: Model = Field(default_factory=lambda: Model.model_validate({}))
    settings: Settings = Field(default_factory=lambda: Settings.model_validate({}))
    workload: Workload | None = None
    recipe: str | None = Field(None, min_length=1, max_length=300)
    figures: list[Figure] = Field(min_length=1, max_length=500)
    tolerance_pct: float = Field(5.0, gt=0, le=100)


class ClaimFile(Strict):
    """The whole file: one ``claim`` mapping."""

    claim: Claim


@dataclass
class FigureData:
    """One claimed figure as stored (claims.models.ClaimedFigure)."""

    metric: str
    concurrency: int
    value: float
    unit: str
    aggregate: bool
    runs: int | None = None
    spread: float | None = None
    note: str = ""


@dataclass
class ClaimData:
    """What a claim holds once read, from whichever way in (claims.models.Claim's fields)."""

    origin: str
    title: str
    figures: list[FigureData]
    url: str = ""
    author: str = ""
    published: datetime.date | None = None
    engine_kind: str = ""
    engine_version: str = ""
    model: str = ""
    quantization: str = ""
    bytes_per_token_gb: float | None = None
    speculative_method: str = ""
    lookahead: int | None = None
    launch_settings: dict[str, Any] = field(default_factory=dict)
    extra_flags: list[str] = field(default_factory=list)
    machine_class: str = ""
    accelerator: str = ""
    bandwidth_gbps: float | None = None
    memory_gb: float | None = None
    nodes: int = 1
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    concurrency_levels: list[int] = field(default_factory=lambda: [1])
    context_depth: int | None = None
    output_type: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)
    thinking: bool | None = None
    runs: int | None = None
    tolerance_pct: float = 5.0
    recipe_name: str = ""
    recipe_text: str = ""


def refused(name: str, exc: ValidationError, prefix: str = "") -> ClaimRefused:
    """The first of pydantic's errors as a refusal naming the file and the field's dotted path."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in (*([prefix] if prefix else []), *first["loc"]))
    message = first["msg"].removeprefix("Value error, ")
    return ClaimRefused(
        gettext_noop("%(name)s: %(field)s: %(message)s"),
        name=name,
        field=where or "(the file)",
        message=message,
    )


def load_yaml(name: str, text: str) -> Any:
    """The YAML document (safe_load: no tags, no objects); ClaimRefused when it is not YAML or too big."""
    if len(text) > MAX_BYTES:
        raise ClaimRefused(
            gettext_noop("%(name)s is larger than %(kib)s KiB"), name=name, kib=MAX_BYTES >> 10
        )
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "somewhere"
        raise ClaimRefused(gettext_noop("%(name)s is not YAML (%(where)s)"), name=name, where=where) from None
