"""The reproduction report of a check: one self-contained HTML file that opens offline, the Markdown to
post back where the claim was published, and the JSON of ``checkclaim --wait``.

The HTML inlines Chart.js, Django's JavaScript catalogue in the report's language,
static/js/claim_chart.js and static/css/report.css, as the compare page's offline report does
(runs.results.report); the check's figures are embedded as JSON and nothing links outside the file.
"""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils import timezone, translation

from claims.results import CheckView, chart_data, markdown_report, verdict_rows
from runs.results.report import catalogue_script, inline_script, inline_style

__all__ = ["html_report", "report_response"]

FORMATS = ("html", "md", "json")


def html_report(view: CheckView, language: str | None = None) -> str:
    """The report as one HTML document in ``language`` (the current one when None)."""
    with translation.override(language or translation.get_language()):
        return render_to_string(
            "claims/report.html",
            {
                "view": view,
                "claim": view.check.claim,
                "rows": verdict_rows(view),
                "generated": timezone.now(),
                "chart": chart_data(view),
                "css": inline_style("css/report.css", "css/claims.css"),
                "chart_js": inline_script("vendor/chart.umd.min.js"),
                "claim_js": inline_script("js/claim_chart.js"),
                "catalogue_js": catalogue_script(),
            },
        )


def report_response(view: CheckView, fmt: str, language: str | None = None) -> HttpResponse:
    """The report as a download: ``fmt`` one of FORMATS."""
    name = f"sparkdash-claim-{view.check.claim_id}-check-{view.check.pk}"
    if fmt == "json":
        response: HttpResponse = JsonResponse(
            view.json, json_dumps_params={"indent": 2, "ensure_ascii": False}
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.json"'
        return response
    if fmt == "md":
        response = HttpResponse(markdown_report(view, language), content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.md"'
        return response
    response = HttpResponse(html_report(view, language), content_type="text/html; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.html"'
    return response
