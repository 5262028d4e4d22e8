"""How a concurrency burst kept to its plan: each request's schedule delay and the concurrency the
client achieved against the one requested (docs/metrics.md, "Client health (per run)").

A burst plans all its c requests to start at once, at the moment it is launched. A request's
schedule delay is its send (its headers going out, Generation.sent_at) minus that moment. The
achieved concurrency is the time-weighted mean of requests in flight from the launch to the
first answer's end: the window in which a client that kept up has all c in flight, so any
shortfall is requests the client had not sent yet. Later, answers ending lower the count by
design, so the window stops there. Plain Python.
"""
from __future__ import annotations

from collections.abc import Sequence

from engines.clients.base import Generation

__all__ = ["achieved_concurrency", "schedule_delays"]


def schedule_delays(gens: Sequence[Generation], planned: float) -> list[float]:
    """Each sent request's delay (s) behind the burst's planned start; never negative."""
    return [max(0.0, g.sent_at - planned) for g in gens]


def achieved_concurrency(gens: Sequence[Generation], planned: float) -> float | None:
    """Mean requests in flight from `planned` to the first answer's end; None without answers or time."""
    if not gens:
        return None
    end = min(g.finished_at for g in gens)
    window = end - planned
    if window <= 0:
        return None
    in_flight_s = sum(max(0.0, end - max(g.sent_at, planned)) for g in gens)
    return in_flight_s / window
