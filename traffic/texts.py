"""The Traffic page's figures as text: written once here, set as they are by the page and its script.

Spreads go through runs.core.scoring.figures.spread_text ("median [min-max] unit (n=N)"), so a
decode speed from real traffic reads like one from a run. The texts are written at request time
in the reader's language (the page and records.json both come through LocaleMiddleware); the
figures themselves (traffic.stats) stay as they are.
"""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, gettext_noop, ngettext

from measure.text import spread_text

__all__ = ["DASH", "figure_texts", "relay_texts", "share_text"]

DASH = "\u2014"
COUNTERS = {
    "accepted": gettext_noop("accepted %(n)s"), "stored": gettext_noop("stored %(n)s"),
    "buffered": gettext_noop("buffered %(n)s"), "dropped": gettext_noop("dropped %(n)s"),
}


def _percent(share: float) -> str:
    return f"{share * 100:.1f} %"


def share_text(figure: dict[str, Any] | None) -> str:
    """A new-input share as "9.3 % (1,234 of 13,270 prompt tokens, n=12)"; an em dash without one."""
    if not figure:
        return DASH
    return gettext("%(share)s (%(new)s of %(total)s prompt tokens, n=%(n)s)") % {
        "share": _percent(figure["share"]), "new": f"{figure['new_prompt_tokens']:,.0f}",
        "total": f"{figure['prompt_tokens']:,.0f}", "n": figure["n"],
    }


def _generation(figure: dict[str, Any] | None) -> str:
    if not figure:
        return DASH
    return gettext("%(share)s of the time (%(generation)s s of %(e2e)s s end to end, n=%(n)s)") % {
        "share": _percent(figure["share"]), "generation": f"{figure['generation_s']:,.1f}",
        "e2e": f"{figure['e2e_s']:,.1f}", "n": figure["n"],
    }


def _ttft(figure: dict[str, Any] | None) -> str:
    if not figure:
        return DASH
    each = " · ".join(f"{p} {figure[p]:.2f} s" for p in ("p50", "p90", "p99"))
    return f"{each} (n={figure['n']})"


def _ttft_note(figure: dict[str, Any] | None) -> str:
    # traffic.stats keeps its note in English (the stats are JSON); the page gets it in its language.
    if not figure or not figure["note"]:
        return ""
    n = figure["n"]
    return ngettext("only %(n)s request: p99 is about the slowest one, not a 1-in-100 figure",
                    "only %(n)s requests: p99 is about the slowest one, not a 1-in-100 figure", n) % {"n": n}


def _by_type(figure: dict[str, Any]) -> str:
    acceptance = figure["acceptance"]
    n = figure["n"]
    text = ngettext("decode %(decode)s · acceptance %(acceptance)s · %(n)s request",
                    "decode %(decode)s · acceptance %(acceptance)s · %(n)s requests", n)
    return text % {"decode": spread_text(figure["decode_tps"], "tok/s"),
                   "acceptance": DASH if acceptance is None else _percent(acceptance), "n": n}


def _errors(errors: dict[str, Any]) -> str:
    counts = {"count": f"{errors['count']:,}", "n": f"{errors['n']:,}"}
    if errors["share"] is None:
        return gettext("%(count)s of %(n)s") % counts
    text = gettext("%(count)s of %(n)s (%(share)s)") % (counts | {"share": _percent(errors["share"])})
    causes = "; ".join(f"{cause} ({n:,})" for cause, n in errors.get("by_cause") or [])
    return f"{text}: {causes}" if causes else text


def figure_texts(stats: dict[str, Any]) -> dict[str, Any]:
    """Every figure of window_stats as the page writes it."""
    requests = stats["requests"]
    return {
        "requests": ngettext("%(n)s request", "%(n)s requests", requests) % {"n": f"{requests:,}"},
        "errors": _errors(stats["errors"]),
        "ttft": _ttft(stats["ttft"]),
        "ttft_note": _ttft_note(stats["ttft"]),
        "new_input_share": share_text(stats["new_input_share"]),
        "generation_share": _generation(stats["generation_share"]),
        "by_output_type": {output: _by_type(fig) for output, fig in stats["by_output_type"].items()},
    }


def _beat(relay: dict[str, Any], machine_name: str) -> str:
    params = {"age": f"{relay['age_s']:.0f}", "machine": machine_name}
    if relay["stale"]:
        return gettext("last heartbeat %(age)s s ago: it has probably stopped; start it again with "
                       "make relay MACHINE=%(machine)s") % params
    return gettext("last heartbeat %(age)s s ago") % params


def relay_texts(relay: dict[str, Any] | None, machine_name: str) -> dict[str, str]:
    """The relay's state in one line and its counters in another (or how to start one).

    `machine_name` is what follows MACHINE= in `make relay` (Machine.command_args: the name, and
    TEAM= outside the default team)."""
    if relay is None:
        state = gettext("no relay running: start one with make relay MACHINE=%(machine)s")
        return {"state": state % {"machine": machine_name}, "counters": ""}
    fronts = sorted(relay["addresses"].items())
    where = ", ".join(gettext("%(api)s at %(url)s") % {"api": api, "url": url} for api, url in fronts)
    counters = " · ".join(gettext(COUNTERS[name]) % {"n": f"{relay[name]:,}"} for name in COUNTERS)
    if relay["last_error"]:
        counters += " · " + gettext("database error: %(error)s") % {"error": relay["last_error"]}
    state = gettext("relay: %(where)s, to %(upstream)s; %(beat)s") % {
        "where": where or gettext("no address"), "upstream": relay["upstream"] or gettext("its engine"),
        "beat": _beat(relay, machine_name),
    }
    return {"state": state, "counters": counters}
