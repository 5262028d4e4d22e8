"""The comparison's energy rows, without Django: J per output token and J per request by job.

One row per figure and job that any compared config ran with telemetry; a config whose runs of
that job have no energy reading shows an em dash, with the sampler's energy_note as its note (the
cell's title). Lower is better: the same work for fewer joules.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from measure.stats import summarize
from measure.words import Words, gettext_noop
from runs.core.hardware import energy_note, energy_of
from runs.core.readings import Summary
from runs.core.scoring.figures import ScoreRow, spread_text

__all__ = ["ENERGY", "FIGURES", "energy_jobs", "energy_rows"]

ENERGY = gettext_noop("Energy")  # a benchmark name: English in exports, translated where shown
# (key in summary.telemetry.energy, label, digits)
FIGURES = [
    ("j_per_token", gettext_noop("J per output token"), 3),
    ("j_per_request", gettext_noop("J per request"), 1),
]


def energy_jobs(runs: Iterable[tuple[int, str, Summary]]) -> list[str]:
    """The jobs, in first-seen order, of the runs that carry telemetry (with or without energy)."""
    return list(dict.fromkeys(job for _, job, summary in runs if (summary or {}).get("telemetry")))


def energy_rows(runs: Sequence[tuple[int, str, Summary]], jobs: Sequence[str]) -> list[ScoreRow]:
    """Per job and figure: the spread over this config's runs of the job that measured energy."""
    rows: list[ScoreRow] = []
    for job in jobs:
        of_job = [(run_id, summary) for run_id, j, summary in runs if j == job]
        measured = [(run_id, e) for run_id, s in of_job if (e := energy_of(s)) is not None]
        unmeasured = [s for _, s in of_job if energy_of(s) is None and (s or {}).get("telemetry")]
        note = energy_note(unmeasured[0]) if unmeasured and not measured else ""
        for key, label, digits in FIGURES:
            spread = summarize(e.get(key) for _, e in measured)
            rows.append({
                "benchmark": ENERGY, "job": job, "key": f"{key}@{job}",
                "label": Words(gettext_noop("%(figure)s, %(job)s runs"), figure=Words(label), job=job),
                "unit": "J", "higher_is_better": False, "count": False, "spread": spread, "tally": None,
                "runs": len(of_job), "run_ids": [run_id for run_id, _ in measured], "out_of": "",
                "text": spread_text(spread, "J", digits), "note": note,
            })
    return rows
