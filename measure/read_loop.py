"""When an agent's repeated reads of one file are a read loop: the agent task's watchdog acts on it
(runs.core.jobs.agent_table.watchdog) and the traffic page warns of it (traffic.warnings)."""
from __future__ import annotations

__all__ = ["NOTE_AT", "WITHDRAW_AT"]

NOTE_AT = 12  # reads of one file after which the watchdog notes the loop to the agent
WITHDRAW_AT = 20  # reads after which it withdraws the tools
