"""The self-contained HTML report of a comparison: one file that opens offline.

Chart.js, Django's JavaScript catalogue in the report's language, static/js/format.js,
static/js/compare.js, static/css/report.css and static/css/compare.css are inlined (the template
holds no hand-written script or style), the data is embedded as JSON, and nothing links outside
the file (the config names are plain text, not links).
"""
from __future__ import annotations

from pathlib import Path
from typing import cast

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.views.i18n import JavaScriptCatalog

from runs.results.comparison import Comparison

__all__ = [
    "REPORT_FILENAME", "catalogue_script", "inline_script", "inline_style", "render_report",
    "report_response",
]

REPORT_FILENAME = "sparkdash-compare.html"


def _static_text(path: str) -> str:
    found = finders.find(path)
    if not found:
        raise FileNotFoundError(f"static file {path} is missing")
    return Path(found).read_text(encoding="utf-8")


def inline_script(path: str) -> str:
    """A static script's text, safe inside a <script> element of an offline file."""
    # Inside <script>, only "</script" would end the element early.
    return _static_text(path).replace("</script", "<\\/script")


def inline_style(*paths: str) -> str:
    """Static style sheets' text, safe inside a <style> element of an offline file."""
    # Inside <style>, only "</style" would end the element early.
    return "\n".join(_static_text(p) for p in paths).replace("</style", "<\\/style")


def render_report(comparison: Comparison, language: str | None = None) -> str:
    """The report as one HTML document, in `language` (a code of settings.LANGUAGES; the
    current language when None): its words, and the scripts' words from the inlined catalogue."""
    with translation.override(language or translation.get_language()):
        return render_to_string("runs/report.html", _context(comparison))


def _context(comparison: Comparison) -> dict[str, object]:
    return {
        "comparison": comparison,
        "generated": timezone.now(),
        "css": inline_style("css/report.css", "css/compare.css"),
        "chart_js": inline_script("vendor/chart.umd.min.js"),
        "format_js": inline_script("js/format.js"),
        "compare_js": inline_script("js/compare.js"),
        "catalogue_js": catalogue_script(),
    }


def catalogue_script() -> str:
    """Django's JavaScript catalogue for the current language, as the page's /jsi18n/ serves it."""
    request = HttpRequest()
    request.method = "GET"
    response = cast(HttpResponse, JavaScriptCatalog.as_view()(request))
    return response.content.decode().replace("</script", "<\\/script")


def report_response(comparison: Comparison, language: str | None = None) -> HttpResponse:
    """The report as a download, in `language` (the request's when None)."""
    response = HttpResponse(render_report(comparison, language), content_type="text/html; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{REPORT_FILENAME}"'
    return response
