"""The Traffic page's figures as text: written once here, set as they are by the page and its script.

Spreads go through runs.core.scoring.figures.spread_text ("median [min-max] unit (n=N)"), so a
decode speed from real traffic reads like one from a run.
"""
from __future__ import annotations

from typing import Any

from runs.core.scoring.figures import spread_text

__all__ = ["DASH", "figure_texts", "relay_texts", "share_text"]

DASH = "\u2014"


def share_text(figure: dict[str, Any] | None) -> str:
    """A new-input share as "9.3 % (1,234 of 13,270 prompt tokens, n=12)"; an em dash without one."""
    if not figure:
        return DASH
    counts = f"{figure['new_prompt_tokens']:,.0f} of {figure['prompt_tokens']:,.0f} prompt tokens"
    return f"{figure['share'] * 100:.1f} % ({counts}, n={figure['n']})"


def _generation(figure: dict[str, Any] | None) -> str:
    if not figure:
        return DASH
    return (f"{figure['share'] * 100:.1f} % of the time ({figure['generation_s']:,.1f} s of "
            f"{figure['e2e_s']:,.1f} s end to end, n={figure['n']})")


def _ttft(figure: dict[str, Any] | None) -> str:
    if not figure:
        return DASH
    each = " · ".join(f"{p} {figure[p]:.2f} s" for p in ("p50", "p90", "p99"))
    return f"{each} (n={figure['n']})"


def _by_type(figure: dict[str, Any]) -> str:
    acceptance = figure["acceptance"]
    accepted = DASH if acceptance is None else f"{acceptance * 100:.1f} %"
    decode = spread_text(figure["decode_tps"], "tok/s")
    return f"decode {decode} · acceptance {accepted} · {figure['n']} request{'s' if figure['n'] != 1 else ''}"


def figure_texts(stats: dict[str, Any]) -> dict[str, Any]:
    """Every figure of window_stats as the page writes it."""
    errors = stats["errors"]
    share = "" if errors["share"] is None else f" ({errors['share'] * 100:.1f} %)"
    return {
        "requests": f"{stats['requests']:,} request{'s' if stats['requests'] != 1 else ''}",
        "errors": f"{errors['count']:,} of {errors['n']:,}{share}",
        "ttft": _ttft(stats["ttft"]),
        "ttft_note": stats["ttft"]["note"] if stats["ttft"] else "",
        "new_input_share": share_text(stats["new_input_share"]),
        "generation_share": _generation(stats["generation_share"]),
        "by_output_type": {kind: _by_type(fig) for kind, fig in stats["by_output_type"].items()},
    }


def relay_texts(relay: dict[str, Any] | None, machine_name: str) -> dict[str, str]:
    """The relay's state in one line and its counters in another (or how to start one)."""
    if relay is None:
        return {"state": f"no relay running: start one with make relay MACHINE={machine_name}",
                "counters": ""}
    where = ", ".join(f"{api} at {url}" for api, url in sorted(relay["addresses"].items())) or "no address"
    beat = f"last heartbeat {relay['age_s']:.0f} s ago"
    if relay["stale"]:
        beat += f": it has probably stopped; start it again with make relay MACHINE={machine_name}"
    counters = " · ".join(f"{name} {relay[name]:,}" for name in ("accepted", "stored", "buffered", "dropped"))
    if relay["last_error"]:
        counters += f" · database error: {relay['last_error']}"
    return {"state": f"relay: {where}, to {relay['upstream'] or 'its engine'}; {beat}", "counters": counters}
