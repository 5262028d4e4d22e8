"""What a claim's pages and exports show of a check: the verdict rows, the chart's points, the
provenance diff, the reproduction report in Markdown, and each claim's latest verdicts for the list.

Every figure comes from the check's FigureResult rows (claims.checking decided them) and the claim's
own metric definitions (claims.core.metrics); nothing is recomputed here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string
from django.utils import translation

from claims.checking import check_json, refresh_check
from claims.core.metrics import CLAIM_METRICS
from claims.core.provenance import ProvenanceRow
from claims.models import Check, Claim, FigureResult
from claims.provenance import provenance_rows

__all__ = [
    "CheckView",
    "chart_data",
    "check_view",
    "latest_checks",
    "markdown_report",
    "verdict_counts",
    "verdict_rows",
]


@dataclass(frozen=True)
class CheckView:
    """One check as its pages show it."""

    check: Check
    results: list[FigureResult]
    provenance: list[ProvenanceRow]
    json: dict[str, Any]

    @property
    def differing(self) -> list[ProvenanceRow]:
        return [row for row in self.provenance if row.differs]


def check_view(check: Check) -> CheckView:
    """The check (refreshed first: a check whose runs have all ended gets its verdicts now)."""
    check = refresh_check(check)
    results = list(check.results.select_related("figure").order_by("figure__metric", "figure__concurrency"))
    return CheckView(check, results, provenance_rows(check), check_json(check))


def chart_data(view: CheckView) -> list[dict[str, Any]]:
    """Per metric: its unit and, per level, the claimed value against the median and its interval."""
    by_metric: dict[str, dict[str, Any]] = {}
    for result in view.results:
        figure = result.figure
        entry = by_metric.setdefault(
            figure.metric, {"metric": figure.metric, "unit": figure.unit, "levels": []}
        )
        entry["levels"].append(
            {
                "concurrency": figure.concurrency,
                "claimed": figure.value,
                "median": result.median,
                "low": result.ci_low,
                "high": result.ci_high,
                "n": result.n,
                "verdict": result.verdict,
            }
        )
    return list(by_metric.values())


def latest_checks(claims: list[Claim]) -> dict[int, Check]:
    """Each claim's latest check (claims with none are left out), refreshed."""
    latest: dict[int, Check] = {}
    checks = (
        Check.objects.filter(claim__in=claims).select_related("engine__machine").order_by("claim", "-created")
    )
    for check in checks:
        if check.claim_id not in latest:
            latest[check.claim_id] = refresh_check(check)
    return latest


def verdict_counts(check: Check) -> list[tuple[str, int]]:
    """The check's verdicts and how many figures got each, in the verdicts' order."""
    counted = Counter(check.results.exclude(verdict="").values_list("verdict", flat=True))
    return sorted(counted.items(), key=lambda item: item[0])


def markdown_report(view: CheckView, language: str | None = None) -> str:
    """The reproduction report to post back where the claim was published, in Markdown."""
    with translation.override(language or translation.get_language()):
        context = {"view": view, "claim": view.check.claim, "rows": verdict_rows(view)}
        return render_to_string("claims/report.md.txt", context).strip() + "\n"


def verdict_rows(view: CheckView) -> list[dict[str, Any]]:
    """The verdict table's cells, written once for the Markdown and HTML reports."""
    rows = []
    for result in view.results:
        figure = result.figure
        digits = 3 if CLAIM_METRICS[figure.metric].unit == "fraction" else 1
        rows.append(
            {
                "result": result,
                "figure": figure,
                "median": _number(result.median, digits),
                "ci": f"{_number(result.ci_low, digits)}\u2013{_number(result.ci_high, digits)}"
                if result.ci_low is not None
                else "",
                "delta": f"{result.delta_pct:+.1f} %" if result.delta_pct is not None else "",
            }
        )
    return rows


def _number(value: float | None, digits: int) -> str:
    return f"{value:,.{digits}f}" if value is not None else ""
