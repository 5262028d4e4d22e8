"""The thin adapter under "Why it differs": a claim's and a check's runs' provenance as the plain
mappings claims.core.provenance compares.

The check's side is read from what its runs recorded (``Run.provenance``: the engine's version,
the model file's SHA-256, the config snapshot) and their telemetry summary (clocks, throttling), and
the machine's bandwidth: the measured one where a bandwidth run exists for the machine, else the one
stated on the machine. Several runs that recorded different values show each of them.
"""

from __future__ import annotations

from typing import Any

from claims.core.provenance import ProvenanceRow, compare_provenance
from claims.models import Check, Claim
from measure.words import Words, gettext_noop
from runs.models import Run

__all__ = ["check_side", "claim_side", "provenance_rows"]

SAMPLING = ("temperature", "top_p", "top_k", "seed")


def provenance_rows(check: Check) -> list[ProvenanceRow]:
    """The claim beside the check's runs, row by row (claims.core.provenance.ROWS)."""
    here, notes = check_side(check)
    return compare_provenance(claim_side(check.claim), here, notes)


def claim_side(claim: Claim) -> dict[str, Any]:
    """What the claim states, keyed as claims.core.provenance.ROWS."""
    return {
        "engine": claim.engine_kind,
        "engine_version": claim.engine_version,
        "model": claim.model,
        "quantization": claim.quantization,
        "speculative": {"method": claim.speculative_method, "lookahead": claim.lookahead},
        "sampling": dict(claim.sampling or {}),
        "thinking": claim.thinking,
        "prompt_tokens": claim.prompt_tokens,
        "nodes": claim.nodes,
        "bandwidth_gbps": claim.bandwidth_gbps,
    }


def check_side(check: Check) -> tuple[dict[str, Any], dict[str, str]]:
    """What the check's runs ran with (the config's when none has recorded yet), and each value's note."""
    runs = [r for r in check.runs.order_by("pk") if isinstance(r.provenance, dict) and r.provenance]
    snapshot = runs[0].provenance.get("config") if runs else None
    config = snapshot if isinstance(snapshot, dict) else (check.config.snapshot() if check.config else {})
    side: dict[str, Any] = {
        "engine": _engine(check, config),
        "engine_version": _distinct(r.provenance.get("engine_version") for r in runs),
        "model": config.get("model"),
        "model_file": _distinct(_model_file(r) for r in runs),
        "quantization": _distinct(r.provenance.get("quantization") for r in runs)
        or config.get("quantization"),
        "speculative": {"method": config.get("speculative_method"), "lookahead": config.get("lookahead")},
        "sampling": {key: config.get(key) for key in SAMPLING},
        "thinking": {"on": True, "off": False}.get(str(config.get("thinking") or "")),
        "prompt_tokens": _distinct(_prompt_tokens(r) for r in runs),
        "nodes": 1,
        "sm_clock_mhz": _distinct(_clock(r) for r in runs),
        "throttle": _throttle(runs),
    }
    notes: dict[str, str] = {}
    side["bandwidth_gbps"], notes["bandwidth_gbps"] = _bandwidth(check)
    if not runs:
        notes["engine_version"] = Words(gettext_noop("no run has recorded it yet"))
    return side, notes


def _engine(check: Check, config: dict[str, Any]) -> str:
    engine = config.get("engine") if isinstance(config.get("engine"), dict) else None
    kind = engine.get("kind") if engine else check.engine.kind
    return f"{kind} (simulator)" if check.engine.simulator else str(kind)


def _model_file(run: Run) -> str | None:
    found = run.provenance.get("model_file")
    if not isinstance(found, dict) or not found.get("sha256"):
        return None
    return f"{found.get('path', '')} sha256 {found['sha256'][:16]}…"


def _prompt_tokens(run: Run) -> int | None:
    """The sized prompt length a run's summary keeps (None where it sent its job's own prompts)."""
    return (run.summary or {}).get("prompt_tokens")


def _clock(run: Run) -> float | None:
    during = ((run.summary or {}).get("telemetry") or {}).get("during") or {}
    clock = during.get("sm_clock_mhz")
    return clock.get("median") if isinstance(clock, dict) else None


def _throttle(runs: list[Run]) -> str:
    """Each run's throttling as its telemetry summary says it ("" where none recorded telemetry)."""
    said: list[str] = []
    for run in runs:
        throttle = ((run.summary or {}).get("telemetry") or {}).get("throttle")
        if isinstance(throttle, dict):
            reasons = [k for k, s in (throttle.get("reasons_s") or {}).items() if s]
            said.append(
                f"#{run.pk}: {throttle.get('throttled_s', 0):g} s {' '.join(reasons)}".strip()
                if throttle.get("throttled")
                else Words(gettext_noop("#%(run)s: none"), run=run.pk)
            )
    return Words.joined("; ", said)


def _bandwidth(check: Check) -> tuple[float | None, str]:
    machine = check.engine.machine
    if machine.measured_bandwidth_gbps and machine.bandwidth_run_id:
        note = Words(gettext_noop("measured by run %(run)s"), run=machine.bandwidth_run_id)
        return machine.measured_bandwidth_gbps, note
    return machine.bandwidth_gbps, Words(gettext_noop("stated on the machine; no bandwidth run yet"))


def _distinct(values: Any) -> Any:
    """One value when the runs agree, each distinct one when they do not, None when none recorded."""
    found = list(dict.fromkeys(v for v in values if v not in (None, "")))
    return found[0] if len(found) == 1 else (found or None)
