"""A run's parameters checked against its job kind (runs.core.registry), with this site's data folders."""
from __future__ import annotations

from typing import Any

from django.conf import settings

from runs.core import registry


def validate_params(job: str, params: dict[str, Any]) -> dict[str, Any]:
    """The job's parameters with defaults filled in; ValueError names the offending field."""
    schema = registry.get(job).params
    unknown = sorted(set(params) - set(schema))
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} for job {job} (known: {', '.join(schema)})")
    data_dirs = settings.SPARKDASH_DATA_DIRS
    clean = {name: spec.clean(name, params.get(name), data_dirs) for name, spec in schema.items()}
    return {name: value for name, value in clean.items() if value is not None}
