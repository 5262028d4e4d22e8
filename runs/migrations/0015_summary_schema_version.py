"""Stored summaries gain their schema version (runs.core.jobs.summary): each one that holds what
its job kind declares, after 0014 pooled the old acceptance, is stamped version 2. One that does
not fit (a job kind since removed, a hand-edited row) is left as it was and still renders."""
from __future__ import annotations

from typing import Any

from django.db import migrations

from runs.core.registry import JOBS
from runs.core.jobs.summary import SCHEMA_VERSION, SummaryError, checked

BATCH = 200


def stamped(job: str, summary: Any) -> bool:
    """Whether `summary` (of a run of `job`) was stamped: it fits its job's type and had no version."""
    spec = JOBS.get(job)
    if spec is None or not isinstance(summary, dict) or not summary or "schema_version" in summary:
        return False
    try:
        checked(spec.summary_type, summary)
    except SummaryError:
        return False
    summary["schema_version"] = SCHEMA_VERSION
    return True


def forwards(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("runs", "Run")
    changed = []
    for run in Run.objects.exclude(summary={}).only("id", "job", "summary").iterator(chunk_size=BATCH):
        if stamped(run.job, run.summary):
            changed.append(run)
        if len(changed) >= BATCH:
            Run.objects.bulk_update(changed, ["summary"])
            changed = []
    Run.objects.bulk_update(changed, ["summary"])


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0014_pooled_acceptance"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True),
    ]
