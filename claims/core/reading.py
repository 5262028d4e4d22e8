"""The ways a claim comes in, read into one ClaimData: a SparkDash claim file (its recipe, if it names
one, filled in), or a result file another tool wrote (through the importers: runs.core.imports.detect).
Plain Python, no Django.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from claims.core.metrics import CLAIM_METRICS
from claims.core.recipe import apply_recipe, read_recipe
from claims.core.schema import Claim, ClaimData, ClaimFile, ClaimRefused, FigureData, load_yaml, refused
from measure.words import gettext_noop
from runs.core.imports.detect import read_results
from runs.core.imports.levels import Unreadable

__all__ = ["RecipeReader", "read_claim_file", "read_result_file"]

# Reads the recipe a claim file names: (its name, its text); ClaimRefused when it cannot.
RecipeReader = Callable[[str], tuple[str, str]]


def read_claim_file(name: str, text: str, recipe_reader: RecipeReader | None = None) -> ClaimData:
    """The claim a SparkDash claim file states; ClaimRefused naming the field when it does not fit."""
    data = load_yaml(name, text)
    try:
        claim = ClaimFile.model_validate(data).claim
    except ValidationError as exc:
        raise refused(name, exc) from None
    if claim.recipe is None and (claim.engine is None or claim.workload is None):
        missing = "engine" if claim.engine is None else "workload"
        raise ClaimRefused(
            gettext_noop(
                "%(name)s: claim.%(field)s: required, unless claim.recipe names a Spark Arena recipe"
            ),
            name=name,
            field=missing,
        )
    read = _claim_data(claim)
    if claim.recipe is not None:
        if recipe_reader is None:
            raise ClaimRefused(
                gettext_noop("%(name)s: claim.recipe: a recipe is read only beside a claim file on disk"),
                name=name,
            )
        recipe_name, recipe_text = recipe_reader(claim.recipe)
        apply_recipe(read, read_recipe(recipe_name, recipe_text), recipe_name, recipe_text)
    _check_levels(name, read)
    return read


def _claim_data(claim: Claim) -> ClaimData:
    figures = [_figure(f.metric, f.concurrency, f.value, f.runs, f.spread, f.note) for f in claim.figures]
    source, hardware, model, settings = claim.source, claim.hardware, claim.model, claim.settings
    read = ClaimData(
        origin="recipe" if claim.recipe else "claim-file",
        title=source.title,
        figures=figures,
        url=source.url,
        author=source.author,
        published=source.published,
        model=model.name,
        quantization=model.quantization,
        bytes_per_token_gb=model.bytes_per_token_gb,
        speculative_method=settings.speculative_method,
        lookahead=settings.lookahead,
        launch_settings=dict(settings.model_extra or {}),
        extra_flags=list(settings.extra_flags),
        machine_class=hardware.name,
        accelerator=hardware.accelerator,
        bandwidth_gbps=hardware.bandwidth_gbps,
        memory_gb=hardware.memory_gb,
        nodes=hardware.nodes,
        tolerance_pct=claim.tolerance_pct,
    )
    if claim.engine is not None:
        read.engine_kind, read.engine_version = claim.engine.kind, claim.engine.version
    if claim.workload is not None:
        w = claim.workload
        read.prompt_tokens, read.output_tokens, read.concurrency_levels = (
            w.prompt_tokens,
            w.output_tokens,
            w.concurrency,
        )
        read.context_depth, read.output_type, read.sampling = w.context_depth, w.output_type, dict(w.sampling)
        read.thinking, read.runs = w.thinking, w.runs
    return read


def _figure(
    metric: str,
    concurrency: int,
    value: float,
    runs: int | None = None,
    spread: float | None = None,
    note: str = "",
) -> FigureData:
    known = CLAIM_METRICS[metric]
    return FigureData(metric, concurrency, value, known.unit, known.scope == "aggregate", runs, spread, note)


def _check_levels(name: str, claim: ClaimData) -> None:
    """Each figure at one of the workload's levels, and no figure stated twice."""
    seen: set[tuple[str, int]] = set()
    for index, figure in enumerate(claim.figures):
        if figure.concurrency not in claim.concurrency_levels:
            raise ClaimRefused(
                gettext_noop(
                    "%(name)s: claim.figures.%(index)s.concurrency: %(level)s is not "
                    "one of the workload's levels (%(levels)s)"
                ),
                name=name,
                index=index,
                level=figure.concurrency,
                levels=", ".join(map(str, claim.concurrency_levels)),
            )
        key = (figure.metric, figure.concurrency)
        if key in seen:
            raise ClaimRefused(
                gettext_noop(
                    "%(name)s: claim.figures.%(index)s: %(metric)s at concurrency %(level)s is stated twice"
                ),
                name=name,
                index=index,
                metric=figure.metric,
                level=figure.concurrency,
            )
        seen.add(key)


# A result file's figure (SparkDash's key in runs.core.imports' levels) -> the claim's metric and scale.
RESULT_FIGURES = {
    "decode_tps_client": ("decode_tps", 1.0),
    "total_tps": ("decode_tps_total", 1.0),
    "ttft_s": ("ttft_ms", 1000.0),
    "prefill_tps": ("prefill_tps", 1.0),
}


def read_result_file(name: str, data: bytes) -> ClaimData:
    """The claim another tool's result file makes: each level's medians become its figures."""
    try:
        peer = read_results(name, data)
    except Unreadable as exc:
        raise ClaimRefused(exc.text, **exc.values) from None
    figures: list[FigureData] = []
    for level in peer.levels:
        concurrency = level.concurrency or 1
        for key, (metric, scale) in RESULT_FIGURES.items():
            value = _median(level.figures.get(key))
            if (
                value is not None
                and value > 0
                and all(f.metric != metric or f.concurrency != concurrency for f in figures)
            ):
                figures.append(_figure(metric, concurrency, value * scale))
    if not figures:
        raise ClaimRefused(
            gettext_noop("%(name)s: no level states a figure a claim can hold (%(metrics)s)"),
            name=name,
            metrics=", ".join(CLAIM_METRICS),
        )
    title = f"{peer.tool} {peer.version}".strip() + f": {name}"
    return ClaimData(
        origin="result-file",
        title=title[:300],
        figures=figures,
        model=peer.model,
        engine_kind=peer.backend,
        concurrency_levels=sorted({f.concurrency for f in figures}),
        launch_settings={"command": peer.command} if peer.command else {},
    )


def _median(spread: Any) -> float | None:
    value = spread.get("median") if isinstance(spread, dict) else None
    return float(value) if isinstance(value, int | float) else None
