"""Regression alerts for imported runs: a tool's new figures against that tool's earlier imports.

Like with like: the baseline is the latest imported runs of the same config revision, the same
tool and the same load level (BASELINE_RUNS of them, at least MIN_BASELINE_RUNS), and each figure
is judged by the sweep alerts' rule (runs.actions.alerts.is_regression: worse than the baseline's
median by more than the noise band, at least NOISE_FLOOR_PCT). An imported run belongs to no
sweep, so its alert names the run and is posted to no webhook; the home page and /alerts/ show it.
"""
from __future__ import annotations

from measure import catalog
from measure.stats import Spread, summarize
from runs.actions.alerts import is_regression
from runs.core.imports import TOOLS
from runs.core.scoring.figures import compare
from runs.core.typed_reads import figure, stored
from runs.models import Alert, Run

__all__ = ["ALERTED", "check_import"]

BASELINE_RUNS = 5
MIN_BASELINE_RUNS = 2
NOISE_FLOOR_PCT = 3.0
ALERTED = ("decode_tps_client", "ttft_s", "tpot_s", "total_tps", "decode_tps_engine", "prefill_tps")
CANDIDATES = 200  # the config revision's latest imported runs looked through for the same tool and level


def check_import(run: Run) -> list[Alert]:
    """Create the Alert rows of a just-imported run (none without enough like runs before it)."""
    base = _baseline(run)
    if len(base) < MIN_BASELINE_RUNS:
        return []
    found = []
    for key in ALERTED:
        current, metric = stored(run, key), catalog.get(key)
        spread = summarize(figure(r, key) for r in base)
        if not isinstance(current, dict) or spread is None or spread["n"] < MIN_BASELINE_RUNS:
            continue
        now: Spread = {"median": current["median"], "min": current["min"], "max": current["max"],
                       "n": current["n"]}
        if is_regression(spread, now, metric.higher_is_better, NOISE_FLOOR_PCT):
            found.append(Alert(
                run=run, config_id=run.config_id, job=run.job, benchmark=_where(run)[:50], metric=key,
                label=metric.label, baseline=spread, value=now,
                delta_pct=compare(spread, now, metric.higher_is_better)["delta_pct"],
            ))
    return Alert.objects.bulk_create(found)


def _baseline(run: Run) -> list[Run]:
    same = Run.objects.filter(
        job=run.job, status=Run.Status.SUCCEEDED, config_id=run.config_id, revision_id=run.revision_id,
        pk__lt=run.pk,
    ).order_by("-pk").only("pk", "params", "summary")[:CANDIDATES]
    return [r for r in same if r.params == run.params][:BASELINE_RUNS]


def _where(run: Run) -> str:
    """The alert's row: the tool, and its load level where the file says."""
    tool = TOOLS.get(run.params.get("tool", ""), run.params.get("tool", ""))
    level = run.params.get("concurrency")
    return f"{tool}, concurrency {level}" if level else tool
