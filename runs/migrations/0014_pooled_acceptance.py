"""Runs stored before acceptance was pooled (docs/metrics.md, Acceptance): their `acceptance_rate`
and `tokens_per_verification` were medians of per-request ratios. Each becomes the secondary
"..._per_request" spread, and the headline is pooled again from what the run kept: the engine's
counters over the run, else its request samples' counts, else (Ollama) its log lines."""
from __future__ import annotations

from typing import Any

from django.db import migrations

from runs.core.request_figures import FROM_LOG, PER_REQUEST, POOLED_METRICS, engine_pooled, pooled_drafting, pooled_figures

BATCH = 200


def _is_spread(figure: Any) -> bool:
    return isinstance(figure, dict) and "median" in figure


def _pooled(figures: dict[str, Any], rows: list[dict[str, Any]], counters: Any = None) -> None:
    """`figures` (a summary, a type's or a length's) with its spreads moved aside and pooled headlines."""
    if not any(_is_spread(figures.get(key)) for key in POOLED_METRICS):
        return
    old = {key: figures.get(key) for key in POOLED_METRICS}
    pooled = pooled_drafting(rows) | engine_pooled(counters)
    for key in POOLED_METRICS:
        figures[key] = pooled[key]
        figures[key + PER_REQUEST] = pooled[key + PER_REQUEST] or old[key]


def _log_headline(figures: dict[str, Any], logged: Any) -> None:
    if figures.get("acceptance_rate") is None and isinstance(logged, dict) and logged.get("generated"):
        figures["acceptance_rate"] = pooled_figures(
            logged["accepted"], logged["generated"], None, FROM_LOG, logged.get("requests"))["acceptance_rate"]


def upgrade(summary: dict[str, Any], rows: list[dict[str, Any]], job: str) -> None:
    """Pool one stored summary's acceptance from its rows (its measured request samples) in place."""
    rows = [r for r in rows if not r.get("failed")]
    if job == "speed":
        _pooled(summary, rows, summary.get("spec_decode_metrics"))
        if "acceptance_rate" in summary:
            _log_headline(summary, summary.get("log_acceptance"))
        for output_type, figures in (summary.get("by_output_type") or {}).items():
            _pooled(figures, [r for r in rows if r.get("output_type") == output_type])
    elif job == "lookahead":
        for length, per_type in (summary.get("lengths") or {}).items():
            at = [r for r in rows if str(r.get("lookahead")) == length]
            for output_type, figures in per_type.items():
                if output_type == "all":
                    _pooled(figures, at, (summary.get("spec_by_length") or {}).get(length))
                    _log_headline(figures, (summary.get("log_acceptance_by_length") or {}).get(length))
                else:
                    _pooled(figures, [r for r in at if r.get("output_type") == output_type])


def forwards(apps: Any, schema_editor: Any) -> None:
    Run, Sample = apps.get_model("runs", "Run"), apps.get_model("runs", "Sample")
    runs = Run.objects.filter(job__in=("speed", "lookahead")).exclude(summary={}).only("id", "job", "summary")
    changed = []
    for run in runs.iterator(chunk_size=BATCH):
        if not isinstance(run.summary, dict):
            continue
        rows = list(Sample.objects.filter(run_id=run.pk, kind="request").values_list("values", flat=True))
        before = repr(run.summary)
        upgrade(run.summary, [r for r in rows if isinstance(r, dict)], run.job)
        if repr(run.summary) != before:
            changed.append(run)
        if len(changed) >= BATCH:
            Run.objects.bulk_update(changed, ["summary"])
            changed = []
    Run.objects.bulk_update(changed, ["summary"])


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0013_metrics_token"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True),
    ]
