"""The simulated engine's /metrics: llama-server's speculative-decoding counters, per-position included.

Every finished reply adds its schedule's counts, so a run's delta between two snapshots is exactly
what its replies drafted and accepted (tests compare the two).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engines.simulator.schedule import Schedule

__all__ = ["SpecCounters"]

PREFIX = "llamacpp:"


@dataclass
class SpecCounters:
    """Totals since the simulator started, as llama-server's `to_metrics` reports them."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    by_position: list[int] = field(default_factory=list)

    def add(self, sched: Schedule) -> None:
        self.drafts += sched.verifications
        self.draft_tokens += sched.draft_tokens
        self.accepted += sched.accepted_tokens
        grow = len(sched.accepted_by_position) - len(self.by_position)
        self.by_position += [0] * max(0, grow)
        for position, n in enumerate(sched.accepted_by_position):
            self.by_position[position] += n

    def text(self) -> str:
        """Prometheus text exposition, llama.cpp's names."""
        counters = {
            "spec_decode_num_drafts_total": self.drafts,
            "spec_decode_num_draft_tokens_total": self.draft_tokens,
            "spec_decode_num_accepted_tokens_total": self.accepted,
        }
        lines = []
        for name, value in counters.items():
            lines += [f"# TYPE {PREFIX}{name} counter", f"{PREFIX}{name} {value}"]
        name = PREFIX + "spec_decode_num_accepted_tokens_per_pos_total"
        if self.by_position:
            lines.append(f"# TYPE {name} counter")
            lines += [f'{name}{{position="{i}"}} {n}' for i, n in enumerate(self.by_position)]
        return "\n".join(lines) + "\n"
