"""What a comparison shows: the runs picked by a stable query string, grouped by config.

`?runs=1,2,3` picks runs, `?configs=4,5` the configs' latest succeeded runs (as the scorecard
picks them: the latest LATEST_RUNS per config and benchmark), `?sweep_runs=7` every run of a
sweep run, and `&baseline=<config id>` the config the others are measured against (default:
the first config). Parameters combine; a run picked twice counts once. Only succeeded runs of
the jobs compared count; the others are listed as left out.

The figures come from runs.core.scoring.table, the parity check from runs.results.parity. The page, its
CSV/JSON export, the HTML report and `manage.py report` all build the same Comparison.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.utils.translation import gettext, gettext_noop, ngettext, pgettext

from engines.access import User, visible
from engines.models import EngineConfig
from runs.core.hardware import throttled_s
from runs.core.outcomes import FAILED_SHARE_LIMIT, failures_note, over_failed_share
from runs.core.registry import JOBS, SCORED_JOBS
from runs.core.scoring.parity import Mismatch
from runs.core.scoring.table import EXPORT_COLUMNS, Group, TableRow, chart_data, compare_groups, export_rows
from runs.core.typed_reads import recorded
from runs.models import Run, SweepExecution
from runs.results.cross_tool import accepted_mismatch
from runs.results.parity import parity
from runs.results.scorecard import LATEST_RUNS, latest_succeeded, newest_revisions_only

__all__ = [
    "EXPORT_COLUMNS", "Comparison", "Selection", "SelectionError", "build_comparison", "parse_selection",
]

PARAMS = ("runs", "configs", "sweep_runs")
def compared_jobs() -> tuple[str, ...]:
    """The job kinds compare shows: those with scorecard rows and those compared by their own rows."""
    return (*SCORED_JOBS, *(name for name, spec in JOBS.items() if spec.compared))
RUN_FIELDS = ("pk", "config_id", "job", "status", "params", "summary", "provenance", "created", "warnings")
# The verdicts (runs.core.scoring.figures) stay English in the exports; the pages translate them.
VERDICTS = (gettext_noop("better"), gettext_noop("worse"), gettext_noop("noise"),
            gettext_noop("no spread"), gettext_noop("n/a"))
# Why a run that did not succeed is left out: its status.
STATUSES = (
    gettext_noop("queued"), gettext_noop("running"), gettext_noop("failed"), gettext_noop("cancelled"),
)
# "there is no ... with id N", one sentence per sort of id.
NO_SUCH = {
    "run": gettext_noop("there is no run with id %(id)s"),
    "sweep run": gettext_noop("there is no sweep run with id %(id)s"),
    "config": gettext_noop("there is no config with id %(id)s"),
}
# A column's mark beside its config's name ({"text", "title"}), None where there is nothing to mark.
Mark = dict[str, str] | None
# Longer ids can't be row ids (and would overflow the database's integer).
ID = re.compile(r"[0-9]{1,18}")


class SelectionError(ValueError):
    """A parameter that names no run, config or sweep run; `param` says which."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param, self.message = param, message


@dataclass(frozen=True)
class Selection:
    """The ids a comparison is asked for, as given (duplicates dropped)."""

    runs: tuple[int, ...] = ()
    configs: tuple[int, ...] = ()
    sweep_runs: tuple[int, ...] = ()
    baseline: int | None = None

    @property
    def empty(self) -> bool:
        return not (self.runs or self.configs or self.sweep_runs)

    def query(self, **extra: str) -> str:
        """The stable query string of this selection, e.g. "configs=4,5&baseline=4"."""
        params = {name: ",".join(map(str, getattr(self, name))) for name in PARAMS if getattr(self, name)}
        if self.baseline is not None:
            params["baseline"] = str(self.baseline)
        return urlencode(params | extra, safe=",")


def _ids(param: str, values: Iterable[str]) -> tuple[int, ...]:
    ids: list[int] = []
    for item in (part.strip() for value in values for part in value.split(",")):
        if not item:
            continue
        if not ID.fullmatch(item):
            raise SelectionError(param, gettext("%(item)s is not an id") % {"item": item})
        ids.append(int(item))
    return tuple(dict.fromkeys(ids))


def parse_selection(params: Mapping[str, Sequence[str]]) -> Selection:
    """A Selection from query parameters (each a list of values, ids comma-separated)."""
    picked = {name: _ids(name, params.get(name, ())) for name in PARAMS}
    baseline = _ids("baseline", params.get("baseline", ()))
    if len(baseline) > 1:
        raise SelectionError("baseline", gettext("give one config id"))
    return Selection(**picked, baseline=baseline[0] if baseline else None)


@dataclass
class Comparison:
    """The configs side by side: groups, table rows, chart data and parity mismatches."""

    selection: Selection
    configs: list[EngineConfig]
    baseline: EngineConfig
    runs: list[Run]
    left_out: list[tuple[Run, str]]
    groups: list[Group] = field(default_factory=list)
    rows: list[TableRow] = field(default_factory=list)
    charts: dict[str, Any] = field(default_factory=dict)
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def columns(self) -> list[tuple[EngineConfig, Mark, Mark, Mark, Mark]]:
        """Each config with its throttle mark, its failed-requests mark, its client-bound mark and its
        accepted-mismatch mark ({"text", "title"}), None where no run throttled (had over 10 % of its
        requests fail, carried the client-bound warning, was imported from a file that did not match
        the config)."""
        return [(config, _throttle_mark(config.pk, self.runs), _failed_mark(config.pk, self.runs),
                 _client_bound_mark(config.pk, self.runs), _mismatch_mark(config.pk, self.runs))
                for config in self.configs]

    def export(self) -> list[dict[str, Any]]:
        """The table as export rows (runs.core.scoring.table.EXPORT_COLUMNS)."""
        return export_rows(self.groups, self.rows)


def build_comparison(
    selection: Selection, known: Mapping[int, EngineConfig] | None = None, *, user: User | None
) -> Comparison | None:
    """Load the selection's runs and configs and compare them; SelectionError for unknown ids,
    None when they hold no config to compare (a sweep run that has no runs yet).

    :param known: configs already loaded with their engine and machine (the page's form has
        them all), so they are not read again
    :param user: only what this user may see counts (another team's ids are unknown ids);
        None for management commands, which see everything
    """
    picked = [*_picked_runs(selection.runs, user), *_sweep_runs(selection.sweep_runs, user)]
    latest = _latest_runs(selection.configs, user)
    runs = list({run.pk: run for run in [*picked, *latest]}.values())
    order = list(dict.fromkeys([*selection.configs, *(run.config_id for run in runs)]))
    configs = _configs(order, known, user)
    if not order:
        return None
    if selection.baseline is not None and selection.baseline not in configs:
        message = gettext("config %(id)s is not among the compared configs") % {"id": selection.baseline}
        raise SelectionError("baseline", message)
    baseline = configs[selection.baseline if selection.baseline is not None else order[0]]
    counted = [run for run in runs if run.status == Run.Status.SUCCEEDED and run.job in compared_jobs()]
    comparison = Comparison(selection, [configs[pk] for pk in order], baseline, counted, _left_out(runs))
    _compare(comparison)
    return comparison


def _compare(comparison: Comparison) -> None:
    by_config: dict[int, list[tuple[int, str, Any]]] = {config.pk: [] for config in comparison.configs}
    for run in comparison.runs:
        by_config[run.config_id].append((run.pk, run.job, run.summary))
    comparison.groups = [Group(c.pk, c.name, by_config[c.pk]) for c in comparison.configs]
    baseline = comparison.baseline.pk
    comparison.rows = compare_groups(comparison.groups, baseline)
    comparison.charts = chart_data(comparison.groups, comparison.rows, baseline)
    configs = {config.pk: config for config in comparison.configs}
    comparison.mismatches = parity(comparison.runs, configs)


def _failed_mark(config_id: int, runs: Iterable[Run]) -> Mark:
    """The mark of a config column where over FAILED_SHARE_LIMIT of a run's requests failed."""
    marked = [run for run in runs if run.config_id == config_id and over_failed_share(run.summary)]
    if not marked:
        return None
    worst = max(recorded(run, "outcomes")["failed_share"] for run in marked)
    which = "; ".join(f"#{run.pk}: {failures_note(run.summary)}" for run in marked)
    title = gettext("over %(limit)s %% of the requests failed (%(which)s): "
                    "the figures are over the requests that succeeded")
    return {"text": gettext("%(share).0f %% of requests failed") % {"share": 100 * worst},
            "title": title % {"limit": f"{100 * FAILED_SHARE_LIMIT:g}", "which": which}}


def _client_bound_mark(config_id: int, runs: Iterable[Run]) -> Mark:
    """The mark of a config column whose runs carry the client-bound warning (runs.worker.client_health)."""
    bound = [run.pk for run in runs if run.config_id == config_id
             and any(w.get("kind") == "client-bound" for w in run.warnings or [])]
    if not bound:
        return None
    title = ngettext(
        "the measuring client, not the engine, may have set the pace of run %(which)s: "
        "its figures may be the tool's, not the engine's (the run's warning says why)",
        "the measuring client, not the engine, may have set the pace of runs %(which)s: "
        "their figures may be the tool's, not the engine's (each run's warning says why)",
        len(bound),
    )
    which = ", ".join(f"#{pk}" for pk in bound)
    return {"text": pgettext("warning code", "client-bound"), "title": title % {"which": which}}


def _mismatch_mark(config_id: int, runs: Iterable[Run]) -> Mark:
    """The mark of a config column with imported runs whose file did not match the config (accepted)."""
    mine = (run for run in runs if run.config_id == config_id)
    found = [(run.pk, text) for run in mine if (text := accepted_mismatch(run))]
    if not found:
        return None
    title = gettext("imported from a file that does not match this config, accepted by whoever imported it "
                    "(%(which)s): the figures may not be this config's")
    which = "; ".join(f"#{pk}: {text}" for pk, text in found)
    return {"text": gettext("accepted mismatch"), "title": title % {"which": which}}


def _throttle_mark(config_id: int, runs: Iterable[Run]) -> Mark:
    """The mark of a config column whose runs throttled: the longest throttle, and which runs."""
    throttled = [(run.pk, s) for run in runs if run.config_id == config_id
                 and (s := throttled_s(run.summary, run.warnings)) is not None]
    if not throttled:
        return None
    longest = max(s for _, s in throttled)
    which = ", ".join(f"#{pk} ({s:.1f} s)" for pk, s in throttled)
    title = ngettext(
        "the box was throttled (heat, power cap or clocks under their floor) during run %(which)s: "
        "its figures may show the heat, not the config",
        "the box was throttled (heat, power cap or clocks under their floor) during runs %(which)s: "
        "its figures may show the heat, not the config",
        len(throttled),
    )
    # The text of runs.core.hardware.throttle_text, in the reader's language.
    text = gettext("throttled %(s).1f s") % {"s": longest}
    return {"text": text, "title": title % {"which": which}}


def _left_out(runs: Iterable[Run]) -> list[tuple[Run, str]]:
    left = []
    for run in runs:
        if run.job not in compared_jobs():
            left.append((run, gettext("%(job)s runs are not compared") % {"job": run.job}))
        elif run.status != Run.Status.SUCCEEDED:
            left.append((run, gettext(str(run.status))))
    return left


def _scoped(user: User | None, objects: QuerySet[Any]) -> QuerySet[Any]:
    return objects if user is None else visible(user, objects)


def _picked_runs(ids: Sequence[int], user: User | None) -> list[Run]:
    if not ids:
        return []
    found = {run.pk: run for run in _scoped(user, Run.objects.filter(pk__in=ids)).only(*RUN_FIELDS)}
    _check("runs", "run", ids, found)
    return [found[pk] for pk in ids]


def _sweep_runs(ids: Sequence[int], user: User | None) -> list[Run]:
    if not ids:
        return []
    executions = _scoped(user, SweepExecution.objects.filter(pk__in=ids)).values_list("pk", flat=True)
    _check("sweep_runs", "sweep run", ids, set(executions))
    runs = _scoped(user, Run.objects.filter(execution_id__in=ids)).only(*RUN_FIELDS)
    return list(runs.order_by("execution_id", "config__name", "created", "pk"))


def _latest_runs(config_ids: Sequence[int], user: User | None) -> list[Run]:
    """The latest LATEST_RUNS succeeded runs per config and benchmark (concurrency sweeps too), of
    the revision each config ran most recently: runs with other settings are never pooled."""
    if not config_ids:
        return []
    runs = latest_succeeded(LATEST_RUNS, compared_jobs(), config_ids, among=_scoped(user, Run.objects.all()),
                            by_revision=True)
    return newest_revisions_only(list(runs.only(*RUN_FIELDS, "revision_id").order_by("-created", "-pk")))


def _configs(
    ids: Sequence[int], known: Mapping[int, EngineConfig] | None, user: User | None
) -> dict[int, EngineConfig]:
    if known is None:
        known = _scoped(user, EngineConfig.objects.select_related("engine__machine")).in_bulk(list(ids))
    _check("configs", "config", ids, known)
    return {pk: known[pk] for pk in ids}


def _check(param: str, noun: str, ids: Iterable[int], found: Iterable[int]) -> None:
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise SelectionError(param, gettext(NO_SUCH[noun]) % {"id": missing[0]})
