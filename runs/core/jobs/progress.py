"""Where a job reports its progress: the seam between a job's loop and whoever records it. Plain Python."""
from __future__ import annotations

from typing import Any, Protocol

__all__ = ["ClientPace", "RunProgress"]


class RunProgress(Protocol):
    """Where a job reports to; the Django side stores and broadcasts, tests just collect."""

    async def on_start(self, total: int) -> None: ...

    async def on_sample(self, sample_type: str, values: dict[str, Any]) -> None: ...

    async def on_summary_so_far(self, summary: dict[str, Any]) -> None:
        """A running job's summary of the requests so far (provisional: not stored, no intervals)."""


class ClientPace(Protocol):
    """Where a job that plans its requests' starts says how its client kept to the plan.

    The run's ClientHealth (measure.client_health) is one; a job given none reports nothing.
    """

    def scheduled(self, delay_s: float) -> None:
        """One request started `delay_s` after its planned start."""

    def achieved(self, requested: int, achieved: float) -> None:
        """A load level asked for `requested` requests in flight and the client kept `achieved`."""

    def process(self, figures: dict[str, Any]) -> None:
        """A measuring process beside the job's own (a split level's) said how its own loop fared:
        measure.client_health's loop_lag_ms, probes, late_probes, wall_s, cpu_pct_of_core,
        loop_cpu_pct_of_core, and its pid."""
