"""A check of a claim on a machine's engine: its workload run here, then one verdict per figure.

Before anything runs, the claim's settings are carried onto a config through the same checks as
every config's (claims.core.carry, then ``EngineConfig.full_clean``), what is not carried over is
listed with its reason, and what this machine cannot reproduce is said: those figures are
``not-comparable``, and a figure above the claim's own hardware's roofline is ``exceeds-hardware``;
neither needs a run. The rest are measured by ordinary runs (runs.actions.runs.start_run): a
concurrency sweep over the claimed levels for decode, the box's total and TTFT, a speed run for
prefill and speculative decoding's pooled figures, each ``repetitions`` times. Once they have
finished, :func:`refresh_check` holds each figure against the runs' values (claims.core.verdicts).
"""

from __future__ import annotations

import shlex
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from claims.core.carry import Carried, cannot_reproduce, carry
from claims.core.metrics import CLAIM_METRICS, ClaimMetric
from claims.core.plausible import exceeds
from claims.core.schema import ClaimData
from claims.core.verdicts import decide
from claims.intake import as_data
from claims.models import Check, Claim, ClaimedFigure, FigureResult
from engines.models import Engine, EngineConfig
from measure.stats import figure_value
from runs.actions.runs import start_run
from runs.core import registry
from runs.core.jobs.concurrency.loop import MAX_PROMPT_TOKENS
from runs.models import Run

__all__ = ["check_json", "refresh_check", "start_check"]

DEFAULT_ANSWER_TOKENS = 128


def start_check(
    claim: Claim,
    engine: Engine,
    *,
    config: EngineConfig | None = None,
    repetitions: int = 3,
    user: Any = None,
) -> Check:
    """A check of ``claim`` on ``engine`` (with ``config``'s model and settings under the claim's own),
    its runs queued. ValueError names what stops it (a setting the config refuses, no config)."""
    data = as_data(claim)
    carried = carry(data, engine.kind, engine.simulator)
    cannot = cannot_reproduce(data, engine.kind, engine.machine.bandwidth_gbps)
    with transaction.atomic():
        check = Check.objects.create(
            claim=claim,
            engine=engine,
            repetitions=repetitions,
            not_carried_over=carried.not_carried_over,
            cannot_reproduce=cannot,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        figures = list(claim.figures.all())
        jobs = _plan(check, data, figures, cannot)
        if jobs:
            check.config = _config(claim, engine, config, carried)
            check.differences = differences(data, check.config)
            check.save(update_fields=["config", "differences"])
            for job, params in jobs.items():
                for _ in range(repetitions):
                    check.runs.add(start_run(check.config, job, params, user))
    return refresh_check(check)


def _plan(
    check: Check, data: ClaimData, figures: list[ClaimedFigure], cannot: list[dict[str, str]]
) -> dict[str, dict[str, Any]]:
    """One result row per figure; the runs the measurable ones need, by job kind: {job: params}."""
    levels: set[int] = set()
    speed = False
    for figure in figures:
        plain = next(
            f for f in data.figures if (f.metric, f.concurrency) == (figure.metric, figure.concurrency)
        )
        ceiling = exceeds(data, plain)
        result = FigureResult(check_run=check, figure=figure, ceiling=ceiling)
        if ceiling is None and cannot:
            result.reason = "; ".join(item["why"] for item in cannot)
        elif ceiling is None and _per_level(CLAIM_METRICS[figure.metric]):
            levels.add(figure.concurrency)
        elif ceiling is None:
            speed = True
        result.save()
    answer = data.output_tokens or DEFAULT_ANSWER_TOKENS
    jobs: dict[str, dict[str, Any]] = {}
    if levels:
        jobs["concurrency"] = {"levels": sorted(levels), "answer_tokens": answer, "reps": 1, "warmup": 1}
        if _sized(data):
            jobs["concurrency"]["prompt_tokens"] = data.prompt_tokens
    if speed:
        jobs["speed"] = {"reps": 1, "warmup": 1, "max_tokens": answer}
    return jobs


def _config(claim: Claim, engine: Engine, base: EngineConfig | None, carried: Carried) -> EngineConfig:
    """The config the check runs: ``base`` (or the engine's one config) with the claim's settings over it,
    checked like every config; ``base`` itself when the claim changes nothing of it."""
    if base is None:
        configs = list(engine.configs.filter(archived=False)[:2])
        if len(configs) != 1:
            raise ValueError(
                f"engine {engine.name} has {'no' if not configs else 'several'} configs: "
                "name the one whose model to run (--config)"
            )
        base = configs[0]
    if base.engine_id != engine.pk:
        raise ValueError(f"config {base.name} is not of engine {engine.name}")
    flags = shlex.split(base.extra_flags) + [f for f in carried.extra_flags if f not in base.extra_flags]
    wanted = carried.fields | {"extra_flags": shlex.join(flags)}
    if all(getattr(base, name) == value for name, value in wanted.items()):
        return base
    name = f"{base.name} claim {claim.pk}"[:100]
    derived = EngineConfig.objects.filter(engine=engine, name=name).first()
    if derived is None:
        derived = EngineConfig.objects.get(pk=base.pk)
        derived.pk, derived.name, derived._state.adding = None, name, True
    for field, value in wanted.items():
        setattr(derived, field, value)
    try:
        derived.full_clean()
    except ValidationError as exc:
        said = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items())
        raise ValueError(f"the claim's settings do not make a config here: {said}") from None
    derived.save()
    return derived


def differences(data: ClaimData, config: EngineConfig) -> list[dict[str, Any]]:
    """What the claim ran with beside what the check runs with, where the two differ."""
    machine = config.engine.machine
    pairs = [
        ("engine", data.engine_kind, config.engine.kind),
        ("model", data.model, config.model),
        ("quantization", data.quantization, config.quantization),
        ("speculative method", data.speculative_method, config.speculative_method),
        ("lookahead", data.lookahead, config.lookahead),
        ("bandwidth (GB/s)", data.bandwidth_gbps, machine.bandwidth_gbps),
        ("prompt tokens", data.prompt_tokens, _prompt_tokens_here(data)),
        ("context depth", data.context_depth, 0),  # the check's prompts start from an empty cache
    ]
    return [
        {"what": what, "claim": claim, "here": here}
        for what, claim, here in pairs
        if claim not in (None, "") and claim != here
    ]


def _prompt_tokens_here(data: ClaimData) -> int | str | None:
    """The concurrency sweep sizes its prompts to the claim's length, up to the longest it sends."""
    return data.prompt_tokens if _sized(data) else "the job's own prompts"


def _sized(data: ClaimData) -> bool:
    """Whether the check's concurrency sweep sends prompts of the claim's stated length."""
    return data.prompt_tokens is not None and 0 < data.prompt_tokens <= MAX_PROMPT_TOKENS


def refresh_check(check: Check) -> Check:
    """Once every run of the check has finished, each figure's values, interval and verdict (done);
    before that, nothing changes."""
    runs = list(check.runs.order_by("pk"))
    if check.status != Check.Status.RUNNING or any(not run.is_finished for run in runs):
        return check
    with transaction.atomic():
        for result in check.results.select_related("figure"):
            _decide(check, result, runs)
        failed = [run for run in runs if run.status != Run.Status.SUCCEEDED]
        check.status = Check.Status.FAILED if runs and len(failed) == len(runs) else Check.Status.DONE
        check.error = "; ".join(f"run {run.pk}: {run.error}" for run in failed)[:2000]
        check.finished = timezone.now()
        check.save(update_fields=["status", "error", "finished"])
    return check


def _decide(check: Check, result: FigureResult, runs: list[Run]) -> None:
    figure = result.figure
    known = CLAIM_METRICS[figure.metric]
    pairs = [(run.pk, measured(run, figure)) for run in runs if run.job == known.job]
    values = [(pk, value) for pk, value in pairs if value is not None]
    verdict = decide(
        figure.value,
        [v for _, v in values],
        check.claim.tolerance_pct,
        stated_spread=figure.spread,
        ceiling=result.ceiling,
        not_comparable=result.reason,
    )
    result.verdict, result.median, result.n = verdict.verdict, verdict.median, verdict.n
    result.ci_low, result.ci_high = verdict.ci if verdict.ci else (None, None)
    result.delta_pct, result.values, result.runs_needed = (
        verdict.delta_pct,
        verdict.values,
        verdict.runs_needed,
    )
    result.run_ids = [pk for pk, _ in pairs]
    result.reason = result.reason or verdict.reason
    result.save()


def measured(run: Run, figure: ClaimedFigure) -> float | None:
    """The run's value of the figure, in the claim's unit (None: the run gave none)."""
    if run.status != Run.Status.SUCCEEDED or not isinstance(run.summary, dict):
        return None
    known = CLAIM_METRICS[figure.metric]
    where = run.summary
    if _per_level(known):
        where = (run.summary.get("levels") or {}).get(str(figure.concurrency)) or {}
    value = figure_value(where.get(known.catalog_key))
    return value * known.scale if value is not None else None


def _per_level(known: ClaimMetric) -> bool:
    """Whether the metric's job kind measures it per load level (the kind says so, runs.core.jobs.spec)."""
    return registry.get(known.job).load == "levels"


def check_json(check: Check) -> dict[str, Any]:
    """The check as `manage.py checkclaim --wait` prints it (docs/claims.md)."""
    claim = check.claim
    figures = []
    for result in check.results.select_related("figure").order_by("figure__metric", "figure__concurrency"):
        figure = result.figure
        row: dict[str, Any] = {
            "metric": figure.metric,
            "concurrency": figure.concurrency,
            "claimed": figure.value,
            "measured": {
                "median": _round(result.median),
                "n": result.n,
                "ci": [_round(result.ci_low), _round(result.ci_high)] if result.ci_low is not None else None,
            },
            "delta_pct": _round(result.delta_pct, 1),
            "verdict": result.verdict,
            "runs": result.run_ids,
        }
        if result.ceiling:
            row["ceiling"] = result.ceiling
        if result.runs_needed:
            row["runs_needed"] = result.runs_needed
        if result.reason:
            row["reason"] = result.reason
        figures.append(row)
    return {
        "claim": claim.pk,
        "check": check.pk,
        "source": claim.title,
        "url": claim.url,
        "status": check.status,
        "engine": str(check.engine),
        "config": check.config.name if check.config else None,
        "simulator": check.engine.simulator,
        "not_carried_over": check.not_carried_over,
        "cannot_reproduce": check.cannot_reproduce,
        "differences": check.differences,
        "figures": figures,
    }


def _round(value: float | None, digits: int = 3) -> float | None:
    return round(value, digits) if value is not None else None
