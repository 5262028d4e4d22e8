"""The one way a figure is written, on every page, export and alert, and in the traffic page:
"median [min-max] unit (n=N)", its interval and percentiles, and a pooled figure with its counts
(docs/metrics.md, How figures are reported). static/js/format.js is its browser twin. Plain Python.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measure.stats import PERCENTILES
from measure.words import Words, gettext_noop

__all__ = ["EN_DASH", "interval_text", "number_text", "pooled_text", "spread_text"]

EN_DASH = "\u2013"


def number_text(value: float, scale: float, digits: int, sign: str = "") -> str:
    scaled = value * scale
    # A median of whole numbers can fall halfway between two: keep its half.
    digits = 1 if digits == 0 and scaled != int(scaled) else digits
    return f"{scaled:{sign}.{digits}f}"


def spread_text(spread: Mapping[str, Any] | None, unit: str, digits: int = 1, scale: float = 1.0) -> str:
    """The one way a figure is written: "median [min-max] unit (n=N)"; an em dash without one.

    Every page, export and alert that writes a spread calls this (static/js/format.js is its
    browser twin).
    """
    if not spread:
        return "—"
    if "pooled" in spread:  # one value over the run (acceptance): no median, no range
        return f"{number_text(spread['pooled'], scale, digits)} {unit}".rstrip()
    low, mid, high = (number_text(spread[k], scale, digits) for k in ("min", "median", "max"))
    return f"{mid} [{low}{EN_DASH}{high}] {unit} (n={spread['n']})"


def interval_text(
    spread: Mapping[str, Any] | None, unit: str, digits: int = 1, scale: float = 1.0,
    counted: str = "requests",
) -> str:
    """The median's 95 % interval and the percentiles: "95 % CI 11.9-12.8 tok/s; p90 13.0; p99 of 18
    requests = max 13.4"; "" for a spread stored before intervals were.

    `counted` names what the n values are (requests, runs): a percentile from fewer values than
    it needs is their largest value, and says so. The text is `Words` (measure.words), so a page
    shows it in the reader's language.
    """
    if spread and "pooled" in spread:
        return pooled_text(spread)
    if not spread or "median_ci" not in spread:
        return ""
    ci, n = spread["median_ci"], spread["n"]
    parts: list[str] = [Words(gettext_noop("95 %% CI %(range)s"), range=_range(ci, scale, digits, unit)) if ci
             else _no_interval(counted, n)]
    for key, _, _ in PERCENTILES:
        if key not in spread:
            continue
        value = number_text(spread[key], scale, digits)
        if spread.get(f"{key}_is_max"):
            parts.append(_only_max(counted, key, n, value))
        else:
            pci = spread.get(f"{key}_ci")
            parts.append(Words(gettext_noop("%(key)s %(value)s [CI %(range)s]"), key=key, value=value,
                               range=_range(pci, scale, digits)) if pci else f"{key} {value}")
    return Words.joined("; ", parts)


POOLED_SOURCES = {
    "engine": gettext_noop("the engine's own counters"),
    "requests": gettext_noop("summed over the requests"),
    "log": gettext_noop("the engine's log"),
}


def pooled_text(pooled: Mapping[str, Any]) -> str:
    """Where a pooled figure comes from: "pooled: 843 of 1095 drafted tokens accepted
    in 285 verifications (the engine's own counters)" (format.js pooled() is its browser twin)."""
    source = Words(POOLED_SOURCES.get(pooled["source"], pooled["source"]))
    if pooled.get("verifications"):
        return Words(gettext_noop("pooled: %(accepted)s of %(drafted)s drafted tokens accepted "
                                  "in %(verifications)s verifications (%(source)s)"),
                     accepted=pooled["accepted"], drafted=pooled["drafted"],
                     verifications=pooled["verifications"], source=source)
    return Words(gettext_noop("pooled: %(accepted)s of %(drafted)s drafted tokens accepted "
                              "(%(source)s)"),
                 accepted=pooled["accepted"], drafted=pooled["drafted"], source=source)


def _range(ci: list[float], scale: float, digits: int, unit: str = "") -> str:
    return f"{number_text(ci[0], scale, digits)}{EN_DASH}{number_text(ci[1], scale, digits)} {unit}".rstrip()


def _no_interval(counted: str, n: int) -> Words:
    if counted == "runs":
        return Words.ngettext("no CI from %(n)s run", "no CI from %(n)s runs", n)
    return Words.ngettext("no CI from %(n)s request", "no CI from %(n)s requests", n)


def _only_max(counted: str, key: str, n: int, value: str) -> Words:
    if counted == "runs":
        return Words.ngettext("%(key)s of %(n)s run = max %(max)s", "%(key)s of %(n)s runs = max %(max)s",
                              n, key=key, max=value)
    return Words.ngettext("%(key)s of %(n)s request = max %(max)s", "%(key)s of %(n)s requests = max %(max)s",
                          n, key=key, max=value)
