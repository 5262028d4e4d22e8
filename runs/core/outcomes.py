"""What became of a run's requests: counted, with each failure kept as a row and its reason.

A request that fails (an HTTP error, a malformed or cut answer, a timeout, no token count) is a
row of its own, {"failed": reason, "error": message}, and the run goes on; figures are computed
over the requests that succeeded, and every summary says how many that was (docs/metrics.md,
"request outcomes"). `Failures` decides when the run stops after all (`Failures.failed`):

- at once when the engine cannot be reached at all (connection refused, no route, bad URL):
  nothing further would answer, and a dead engine must fail fast with its reason;
- after CONSECUTIVE_LIMIT failures in a row (warm-up requests included; in a concurrent burst,
  in the order they finish): an engine failing every request is broken, not flaky, and waiting
  out each one (a timeout at a time) would only delay the same verdict;
- at the end when not one request succeeded (`Failures.check_any_succeeded`).

Plain Python, no Django: the jobs count here and the pages read the counts from the summary.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from engines.clients.base import EngineClient, Generation, GenerationRequest
from engines.errors import (
    EngineCut,
    EngineError,
    EngineHTTPError,
    EngineMalformed,
    EngineTimeout,
    EngineUnreachable,
    NoTokenCount,
)
from measure.words import gettext_noop
from runs.core.request_figures import send
from runs.core.worded import warning

__all__ = [
    "CONSECUTIVE_LIMIT",
    "FAILED_SHARE_LIMIT",
    "Failures",
    "count_outcomes",
    "failed_row",
    "failed_share_warning",
    "failure_reason",
    "failures_note",
    "over_failed_share",
    "over_text",
    "succeeded",
]

CONSECUTIVE_LIMIT = 3
# A run where more than this share of its requests failed is marked (docs/metrics.md).
FAILED_SHARE_LIMIT = 0.10

_REASONS: tuple[tuple[type[EngineError], str], ...] = (
    (EngineUnreachable, gettext_noop("engine unreachable")),
    (EngineTimeout, gettext_noop("timeout")),
    (EngineMalformed, gettext_noop("malformed reply")),
    (EngineCut, gettext_noop("stream cut")),
    (NoTokenCount, gettext_noop("no token count")),
)


def failure_reason(exc: EngineError) -> str:
    """The failure's reason in a few words: "http 500", "malformed reply", "stream cut", ...

    An engine error the clients give no class of its own (an error message inside the stream) is
    "engine error".
    """
    if isinstance(exc, EngineHTTPError):
        return f"http {exc.status}"
    found = (reason for error_type, reason in _REASONS if isinstance(exc, error_type))
    return next(found, gettext_noop("engine error"))


def failed_row(exc: EngineError) -> dict[str, Any]:
    """The row of a failed request: its reason and the error's message (which names the request)."""
    return {"failed": failure_reason(exc), "error": str(exc)}


def succeeded(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of requests that succeeded (the ones figures are computed over)."""
    return [row for row in rows if not row.get("failed")]


class Failures:
    """The run's rule for failed requests: record them, or stop the run (see the module doc)."""

    def __init__(self, limit: int = CONSECUTIVE_LIMIT) -> None:
        self.limit = limit
        self.in_a_row: list[EngineError] = []

    def ok(self) -> None:
        """A request succeeded: the count of failures in a row starts again."""
        self.in_a_row.clear()

    def failed(self, exc: EngineError) -> dict[str, Any]:
        """The failed request's row; raises instead when the run must stop."""
        if isinstance(exc, EngineUnreachable):
            raise exc
        self.in_a_row.append(exc)
        if len(self.in_a_row) >= self.limit:
            first = self.in_a_row[0]
            raise first.reworded(f"{self.limit} requests in a row failed, so the run stops; first {first}")
        return failed_row(exc)

    async def send(
        self, client: EngineClient, request: GenerationRequest, where: str
    ) -> Generation | dict[str, Any]:
        """The request's Generation, or its failed row when the run goes on (see `failed`)."""
        try:
            gen = await send(client, request, where)
        except EngineError as exc:
            return self.failed(exc)
        self.ok()
        return gen

    @staticmethod
    def check_any_succeeded(rows: Iterable[Mapping[str, Any]]) -> None:
        """Raises EngineError (with the first failure's message) when requests were sent and all failed."""
        listed = list(rows)
        if listed and not succeeded(listed):
            raise EngineError(f"every request failed ({len(listed)}); the first: {listed[0]['error']}")


def count_outcomes(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """attempted, succeeded, failed (and by reason), cut by max_tokens, stopped early, failed share.

    cut_by_max_tokens: finish_reason "length"; stopped_early: finish_reason "stop" (the model
    ended its answer before max_tokens). Other finish reasons (tool calls, none given) are in
    succeeded only.
    """
    listed = list(rows)
    reasons = Counter(str(row["failed"]) for row in listed if row.get("failed"))
    done = succeeded(listed)
    finishes = Counter(row.get("finish_reason") for row in done)
    failed = sum(reasons.values())
    share = failed / len(listed) if listed else 0.0
    return {
        "attempted": len(listed),
        "succeeded": len(done),
        "failed": failed,
        "failed_by_reason": dict(sorted(reasons.items())),
        "cut_by_max_tokens": finishes["length"],
        "stopped_early": finishes["stop"],
        "failed_share": share,
        "over_failed_share": share > FAILED_SHARE_LIMIT,
    }


def over_failed_share(summary: Mapping[str, Any] | None) -> bool:
    """Whether a run's summary says more than FAILED_SHARE_LIMIT of its requests failed."""
    outcomes = (summary or {}).get("outcomes")
    return bool(isinstance(outcomes, Mapping) and outcomes.get("over_failed_share"))


def failures_note(summary: Mapping[str, Any] | None) -> str:
    """"3 of 24 requests failed (12.5 %: http 500 3)", or "" when none failed."""
    outcomes = (summary or {}).get("outcomes")
    if not isinstance(outcomes, Mapping) or not outcomes.get("failed"):
        return ""
    reasons = ", ".join(f"{reason} {n}" for reason, n in outcomes.get("failed_by_reason", {}).items())
    return (f"{outcomes['failed']} of {outcomes['attempted']} requests failed "
            f"({100 * outcomes['failed_share']:.1f} %: {reasons})")


def failed_share_warning(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's `failed requests` warning when over FAILED_SHARE_LIMIT of its requests failed, or none."""
    if not over_failed_share(summary):
        return []
    outcomes = summary["outcomes"]
    reasons = ", ".join(f"{reason} {n}" for reason, n in outcomes.get("failed_by_reason", {}).items())
    said = warning("failed requests", OVER_FAILED_SHARE, failed=outcomes["failed"],
                   attempted=outcomes["attempted"], pct=f"{100 * outcomes['failed_share']:.1f}",
                   reasons=reasons, limit=f"{100 * FAILED_SHARE_LIMIT:g}")
    return [said | {"failed_share": outcomes["failed_share"]}]


OVER_FAILED_SHARE = gettext_noop(
    "%(failed)s of %(attempted)s requests failed (%(pct)s %%: %(reasons)s): over %(limit)s %%, "
    "so its figures may describe only the survivors"
)


def over_text(summaries: Iterable[Mapping[str, Any] | None]) -> str:
    """"over 9 of 12 requests" summed over runs' outcomes; "" when none of them counted outcomes."""
    counted = [o for s in summaries if isinstance(o := (s or {}).get("outcomes"), Mapping)]
    if not counted:
        return ""
    done, tried = sum(o["succeeded"] for o in counted), sum(o["attempted"] for o in counted)
    return f"over {done} of {tried} requests"
