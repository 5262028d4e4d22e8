"""CSV and JSON downloads of any table a page shows: `?format=csv` or `?format=json` on its URL."""
from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

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
        writer.writerows(rows)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response
