"""Factory-made speed and lookahead runs with speculative figures, as the worker stores them:
acceptance by draft position (per run, output type and length), the /metrics counters and the
TTFT check (docs/metrics.md, Per-position acceptance)."""
from __future__ import annotations

from typing import Any

from runs.models import Run
from tests.factories import RunFactory, SampleFactory

# Realistic shares for a 4-token draft: structured output accepts more than prose.
POSITIONS = [0.9, 0.75, 0.6, 0.45]
BY_TYPE = {
    "tool-call": [0.95, 0.85, 0.75, 0.62], "table": [0.93, 0.8, 0.68, 0.55],
    "prose-en": [0.85, 0.66, 0.48, 0.33], "prose-ja": [0.82, 0.6, 0.44, 0.3],
}
TTFT_CHECK = {"client_s": 0.213, "engine_s": 0.201, "diff_pct": 5.97, "agree": True}
BY_LENGTH = {2: [0.88, 0.7], 4: POSITIONS, 8: [0.9, 0.76, 0.61, 0.47, 0.36, 0.27, 0.2, 0.14]}


def spread(median: float, width: float, n: int = 24) -> dict[str, Any]:
    return {"median": median, "min": median - width, "max": median + width, "n": n}


def counters(positions: list[float] | None, drafts: int = 1200) -> dict[str, Any] | None:
    """A /metrics delta (spec_decode_metrics) whose per-position counts give `positions`."""
    if positions is None:
        return None
    by_position = [round(p * drafts) for p in positions]
    accepted = sum(by_position)
    return {
        "drafts": drafts, "draft_tokens": drafts * len(positions), "accepted": accepted,
        "acceptance_rate": accepted / (drafts * len(positions)),
        "tokens_per_verification": 1 + accepted / drafts,
        "accepted_by_position": by_position, "acceptance_by_position": positions,
    }


def speed_summary(per_type: bool = True) -> dict[str, Any]:
    """A vLLM-like speed run (per output type, the engine's TTFT); per_type=False: llama-server's
    counters only."""
    by_type = {
        t: {"decode_tps_client": spread(40.0 + i, 1.0, 6), "acceptance_rate": spread(sum(p) / 4, 0.02, 6),
            "acceptance_by_position": p if per_type else None}
        for i, (t, p) in enumerate(BY_TYPE.items())
    }
    return {
        "ttft_s": spread(0.213, 0.02), "ttft_engine_s": spread(0.201, 0.02) if per_type else None,
        "decode_tps_client": spread(41.2, 1.4), "decode_tps_engine": spread(42.0, 1.2),
        "acceptance_rate": spread(0.675, 0.05), "tokens_per_verification": spread(3.7, 0.2),
        "requests": 24, "by_output_type": by_type, "acceptance_by_position": POSITIONS,
        "spec_decode_metrics": counters(POSITIONS),
        "cross_check": {"client_tps": 41.2, "engine_tps": 42.0, "diff_pct": -1.9, "agree": True},
        "ttft_check": TTFT_CHECK if per_type else None,
    }


def _length_figures(positions: list[float] | None) -> dict[str, Any]:
    rate = sum(positions) / len(positions) if positions else None
    return {
        "decode_tps_client": spread(40.0 + 4 * len(positions or ()), 1.0, 6),
        "decode_tps_engine": spread(41.0 + 4 * len(positions or ()), 1.0, 6),
        "acceptance_rate": spread(rate, 0.02, 6) if rate else None,
        "tokens_per_verification": spread(1 + sum(positions), 0.1, 6) if positions else None,
        "acceptance_by_position": positions,
    }


def lookahead_summary() -> dict[str, Any]:
    """A sweep over lengths 0, 2, 4 and 8 (no drafting at 0), two output types per length."""
    per_length = {0: None, **BY_LENGTH}
    return {
        "lengths": {str(k): {t: _length_figures(p) for t in ("all", "table", "prose-en")}
                    for k, p in per_length.items()},
        "spec_by_length": {str(k): counters(p) for k, p in per_length.items()},
        "best_lookahead": 4, "requests": 24,
    }


def speed_run(**fields: Any) -> Run:
    return RunFactory(job="speed", status=Run.Status.SUCCEEDED, summary=speed_summary(), **fields)


def lookahead_run(**fields: Any) -> Run:
    params = {"lengths": [0, 2, 4, 8], "reps": 1}
    summary = lookahead_summary()
    return RunFactory(job="lookahead", status=Run.Status.SUCCEEDED, params=params, summary=summary, **fields)


def request_samples(run: Run, per_type: dict[str, list[int]], drafts: int = 10) -> None:
    """One request sample per output type with its per-position counts over `drafts` verifications."""
    for seq, (output_type, accepted) in enumerate(per_type.items()):
        values = {"output_type": output_type, "decode_tps_client": 41.0, "acceptance_rate": 0.7,
                  "accepted_by_position": accepted, "verifications": drafts}
        SampleFactory(run=run, seq=seq, values=values)


def _request(i: int, output_type: str, positions: list[float], **extra: Any) -> dict[str, Any]:
    """A request's sample values (60 drafts) with per-position counts near `positions`, varied by i;
    no drafting without positions."""
    drafts, wobble, speedup = 60, 1 + ((i * 7) % 5 - 2) / 100, 2 * len(positions)
    accepted = [round(min(p * wobble, 1.0) * drafts) for p in positions]
    return {
        "output_type": output_type, "rep": i // 4, "ttft_s": 0.2 + (i % 5) / 100, "ttft_engine_s": 0.19,
        "decode_tps_client": 40.0 * wobble + speedup, "decode_tps_engine": 41.0 * wobble + speedup,
        "acceptance_rate": sum(accepted) / (drafts * len(accepted)) if accepted else None,
        "accepted_by_position": accepted or None, "verifications": drafts if accepted else None, **extra,
    }


def speed_samples(run: Run, reps: int = 6) -> None:
    """Request samples of every output type, `reps` times over, near BY_TYPE's figures."""
    for i in range(reps * len(BY_TYPE)):
        output_type, positions = list(BY_TYPE.items())[i % len(BY_TYPE)]
        SampleFactory(run=run, seq=i, values=_request(i, output_type, positions))


def lookahead_samples(run: Run) -> None:
    """Request samples at each length of lookahead_summary() (none drafted at length 0)."""
    seq = 0
    for length in (0, *BY_LENGTH):
        for output_type in ("table", "prose-en"):
            for _ in range(3):
                values = _request(seq, output_type, BY_LENGTH.get(length, []), lookahead=length)
                SampleFactory(run=run, seq=seq, values=values)
                seq += 1
