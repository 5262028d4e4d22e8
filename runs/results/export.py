"""CSV and JSON downloads of any table a page shows: `?format=csv` or `?format=json` on its URL.

Every CSV cell goes through teams.csvsafe.safe_cell: formula-like text is written as text.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from runs.core.scoring.table import POSITION_KEY
from teams.csvsafe import safe_cell

FORMATS = ("csv", "json")


def wants_export(request: HttpRequest) -> str | None:
    """The export format asked for (csv or json), or None for the HTML page."""
    fmt = request.GET.get("format", "")
    return fmt if fmt in FORMATS else None


def table_response(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], fmt: str, filename: str
) -> HttpResponse:
    """The rows as a CSV download (the columns in order) or as JSON ({"columns", "rows"})."""
    if fmt == "json":
        response: HttpResponse = JsonResponse(
            {"columns": list(columns), "rows": [{c: row.get(c) for c in columns} for row in rows]}
        )
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        # Text that a spreadsheet would run as a formula (a config named "=1+1") opens as text.
        writer.writerows({c: safe_cell(row.get(c)) for c in columns} for row in rows)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def position_columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """acceptance_pos_1 .. acceptance_pos_k, k the most draft positions of any row (position_values)."""
    most = max((int(key[len(POSITION_KEY):]) for row in rows for key in row if key.startswith(POSITION_KEY)),
               default=0)
    return [f"{POSITION_KEY}{i}" for i in range(1, most + 1)]


def position_values(fractions: Sequence[float] | None) -> dict[str, float]:
    """A run's acceptance by draft position as {acceptance_pos_i: %}, in the unit pages show it
    (docs/metrics.md, Per-position acceptance); empty when the run has none."""
    return {f"{POSITION_KEY}{i}": round(100 * f, 3) for i, f in enumerate(fractions or (), 1)}
