"""Why a claim and its check differ: the claim's provenance beside the check's runs', row by row.

Each side is a plain mapping of the same keys (:data:`ROWS`): what the claim states, and what the
check's runs recorded (claims.provenance reads them). A row differs when both sides say something
and the two disagree: text compared without case or spacing, numbers beyond a relative tolerance
(the bandwidth's :data:`BANDWIDTH_TOLERANCE`, as claims.core.carry's "another class of machine").
A side that says nothing is shown as such and never counts as a difference: an unstated setting is
unknown, not different. Plain Python, no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from measure.words import Words, gettext_noop

__all__ = ["BANDWIDTH_TOLERANCE", "ROWS", "ProvenanceRow", "compare_provenance", "differs", "shown"]

BANDWIDTH_TOLERANCE = 0.10
NUMBER_TOLERANCE = 0.01
# (key, label): the rows in the order the page shows them.
ROWS = (
    ("engine", gettext_noop("engine")),
    ("engine_version", gettext_noop("engine version and build")),
    ("model", gettext_noop("model")),
    ("model_file", gettext_noop("model file and its SHA-256")),
    ("quantization", gettext_noop("quantization")),
    ("speculative", gettext_noop("speculative settings")),
    ("sampling", gettext_noop("sampling")),
    ("thinking", gettext_noop("thinking")),
    ("prompt_tokens", gettext_noop("prompt tokens")),
    ("nodes", gettext_noop("nodes")),
    ("bandwidth_gbps", gettext_noop("machine bandwidth (GB/s)")),
    ("sm_clock_mhz", gettext_noop("SM clock during the runs (MHz)")),
    ("throttle", gettext_noop("throttling")),
)
# A sized prompt comes within 2 % of its target (runs.core.jobs.concurrency); a claim's own sizing may
# be as loose.
TOLERANCES = {"bandwidth_gbps": BANDWIDTH_TOLERANCE, "prompt_tokens": 0.05}
ON, OFF = gettext_noop("on"), gettext_noop("off")
NAMED = gettext_noop("%(name)s %(value)s")  # a setting beside its value: "lookahead 12"


@dataclass(frozen=True)
class ProvenanceRow:
    """One row of the side-by-side: the claim's value, the check's, and whether they differ.

    :param claim: the claim's value as text ("" when it states none).
    :param here: the check's runs' value as text ("" when they recorded none).
    :param note: where the check's value comes from ("measured by run 12", "stated on the machine").
    """

    key: str
    label: str
    claim: str
    here: str
    differs: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": self.key,
            "label": self.label,
            "claim": self.claim,
            "here": self.here,
            "differs": self.differs,
            "note": self.note,
        }


def compare_provenance(
    claim: Mapping[str, Any], here: Mapping[str, Any], notes: Mapping[str, str] | None = None
) -> list[ProvenanceRow]:
    """Every row of :data:`ROWS`, the claim's value beside the check's, the differing ones flagged."""
    notes = notes or {}
    return [
        ProvenanceRow(
            key,
            label,
            shown(claim.get(key)),
            shown(here.get(key)),
            differs(claim.get(key), here.get(key), TOLERANCES.get(key, NUMBER_TOLERANCE)),
            notes.get(key, ""),
        )
        for key, label in ROWS
    ]


def differs(claim: Any, here: Any, tolerance: float = NUMBER_TOLERANCE) -> bool:
    """Whether two stated values disagree (an unstated side never does)."""
    if _unstated(claim) or _unstated(here):
        return False
    if _number(claim) and _number(here):
        scale = max(abs(float(claim)), abs(float(here)), 1e-12)
        return abs(float(claim) - float(here)) / scale > tolerance
    if isinstance(claim, Mapping) and isinstance(here, Mapping):
        keys = set(claim) & set(here)
        return any(differs(claim[k], here[k], tolerance) for k in keys)
    return _plain(claim) != _plain(here)


def shown(value: Any) -> str:
    """A side's value as one line of text ("" when unstated); its words (on, off) stay `Words`, so
    a page in another language translates them and leaves names and figures as they are."""
    if _unstated(value):
        return ""
    if isinstance(value, bool):
        return Words(ON if value else OFF)
    if _number(value):
        return f"{float(value):,.4g}" if abs(float(value)) < 1e4 else f"{float(value):,.0f}"
    if isinstance(value, Mapping):
        entries = sorted((k, shown(v)) for k, v in value.items() if not _unstated(v))
        return Words.joined(", ", [Words(NAMED, name=k, value=v) for k, v in entries]) if entries else ""
    if isinstance(value, list | tuple):
        return Words.joined(" / ", [shown(v) for v in value])
    return value if isinstance(value, str) else str(value)


def _unstated(value: Any) -> bool:
    if value is None or value == "" or value == [] or value == {}:
        return True
    return isinstance(value, float) and math.isnan(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _plain(value: Any) -> str:
    return " ".join(shown(value).lower().replace("_", "-").split())
