"""A config's scorecard (speed and quality in one table) and the comparison of two configs.

The figures come from runs.core.scoring.figures; this module only picks the runs: succeeded ones,
the latest LATEST_RUNS per benchmark and config revision, all read in one query. A scorecard is
one revision's: runs with other settings never pool into its figures (engines.revisions).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import F, QuerySet, Window
from django.db.models.fields.json import KT
from django.db.models.functions import RowNumber

from engines.models import ConfigRevision, EngineConfig
from runs.core.registry import SCORED_JOBS
from runs.core.scoring.efficiency import TimedRun, efficiency_rows
from runs.core.scoring.figures import CompareRow, ScoreRow, compare_rows, score_rows
from runs.models import Run

__all__ = [
    "LATEST_RUNS", "SCORECARD_COLUMNS", "compare_configs", "latest_runs", "latest_succeeded",
    "newest_revisions_only", "revision_scorecards", "scorecard", "scorecard_export",
]

LATEST_RUNS = 20


def latest_succeeded(
    per_benchmark: int, jobs: Iterable[str] | None = None, config_ids: Iterable[int] | None = None,
    among: QuerySet[Run] | None = None, by_revision: bool = False,
) -> QuerySet[Run]:
    """The latest `per_benchmark` succeeded runs of each config and benchmark, as one query.

    EvalPlus runs are ranked per dataset and imported runs per tool, so HumanEval+ runs do not push
    MBPP+ ones out, nor GuideLLM files vLLM ones. Callers
    add the columns and relations they read, and an order.

    :param among: the runs to pick from (e.g. those a user may see); default all
    :param by_revision: per config revision rather than per config
    """
    partition: list[Any] = [F("config_id"), F("job"), KT("summary__dataset"), KT("summary__tool")]
    rank = Window(
        RowNumber(),
        partition_by=[*partition, F("revision_id")] if by_revision else partition,
        order_by=[F("created").desc(), F("pk").desc()],
    )
    runs = (Run.objects.all() if among is None else among).filter(status=Run.Status.SUCCEEDED)
    if jobs is not None:
        runs = runs.filter(job__in=list(jobs))
    if config_ids is not None:
        runs = runs.filter(config_id__in=list(config_ids))
    return runs.annotate(rank=rank).filter(rank__lte=per_benchmark)


def latest_runs(config_ids: Iterable[int]) -> list[Run]:
    """The latest LATEST_RUNS succeeded runs per config revision and benchmark, newest first, in one query."""
    runs = latest_succeeded(LATEST_RUNS, SCORED_JOBS, config_ids, by_revision=True)
    fields = ("pk", "config_id", "revision_id", "job", "summary", "created", "started", "finished")
    return list(runs.only(*fields).order_by("-created", "-pk"))


def newest_revisions_only(runs: list[Run]) -> list[Run]:
    """Of each config's runs, those of the revision it ran most recently (runs come newest first)."""
    newest: dict[int, int | None] = {}
    for run in runs:
        newest.setdefault(run.config_id, run.revision_id)
    return [run for run in runs if run.revision_id == newest[run.config_id]]


def _newest_revision_runs(runs: list[Run], config_id: int) -> list[Run]:
    return newest_revisions_only([run for run in runs if run.config_id == config_id])


def _rows(runs: Iterable[Run]) -> list[ScoreRow]:
    return score_rows((run.pk, run.job, run.summary) for run in runs)


def scorecard(config: EngineConfig) -> list[ScoreRow]:
    """The rows of the config's revision run most recently, for its CSV and JSON (revision_scorecards)."""
    return _scorecard_of(_newest_revision_runs(latest_runs([config.pk]), config.pk))


def revision_scorecards(config: EngineConfig, most: int = 3) -> list[dict[str, Any]]:
    """The scorecards of the config's ``most`` newest revisions with succeeded runs, newest first,
    each with its revision and what changed from the revision before it."""
    runs = latest_runs([config.pk])
    by_revision: dict[int | None, list[Run]] = {}
    for run in runs:
        by_revision.setdefault(run.revision_id, []).append(run)
    revisions = {r.pk: r for r in ConfigRevision.objects.filter(config=config)}
    numbered = sorted(by_revision, key=lambda pk: revisions[pk].number if pk in revisions else 0,
                      reverse=True)
    cards = []
    for pk in numbered[:most]:
        revision = revisions.get(pk) if pk is not None else None
        earlier = _previous(revisions, revision)
        changes = revision.changes_from(earlier) if revision is not None else []
        cards.append({"revision": revision, "changes": changes, "rows": _scorecard_of(by_revision[pk])})
    return cards


def _previous(
    revisions: dict[int, ConfigRevision], revision: ConfigRevision | None
) -> ConfigRevision | None:
    if revision is None:
        return None
    earlier = [r for r in revisions.values() if r.number < revision.number]
    return max(earlier, key=lambda r: r.number) if earlier else None


def _scorecard_of(runs: list[Run]) -> list[ScoreRow]:
    """Rows for the benchmarks the runs cover; after each quality benchmark's rows, its correct
    answers per minute and per kJ (runs.core.scoring.efficiency)."""
    timed = [TimedRun(run.pk, run.job, run.summary, _wall_s(run)) for run in runs]
    rows: list[ScoreRow] = []
    for row in (row for row in _rows(runs) if row["runs"]):
        if rows and rows[-1]["benchmark"] != row["benchmark"]:
            rows += efficiency_rows(rows[-1]["benchmark"], timed)
        rows.append(row)
    return rows + (efficiency_rows(rows[-1]["benchmark"], timed) if rows else [])


def _wall_s(run: Run) -> float | None:
    if run.started is None or run.finished is None:
        return None
    return (run.finished - run.started).total_seconds()


def compare_configs(a: EngineConfig, b: EngineConfig) -> list[CompareRow]:
    """Rows of b compared with a (a is the base), for benchmarks either config ran."""
    runs = latest_runs([a.pk, b.pk])
    rows_a = _rows(_newest_revision_runs(runs, a.pk))
    rows_b = _rows(_newest_revision_runs(runs, b.pk))
    return compare_rows(rows_a, rows_b)


SCORECARD_COLUMNS = (
    "benchmark", "metric", "unit", "median", "min", "max", "n", "count", "runs", "out_of", "text",
)


def scorecard_export(rows: Iterable[ScoreRow]) -> list[dict[str, object]]:
    """The scorecard as flat rows for CSV/JSON: the spread's figures as numbers, counts as k of n."""
    flat = []
    for row in rows:
        spread: Mapping[str, object] = row["spread"] or {}
        tally: Mapping[str, object] = row["tally"] or {}
        flat.append({
            "benchmark": row["benchmark"], "metric": row["label"], "unit": row["unit"],
            "median": spread.get("median"), "min": spread.get("min"), "max": spread.get("max"),
            "n": spread.get("n", tally.get("n")), "count": tally.get("count"), "runs": row["runs"],
            "out_of": row["out_of"], "text": row["text"],
        })
    return flat
