"""The agent table task: fixtures, tools, read-loop watchdog, grader, loop (figures: docs/metrics.md).

Plain async Python with no Django import, like the rest of runs.core.
"""
from runs.core.jobs.agent_table.fixture import FIXTURES_DIR, Fixture, Row, load_fixture
from runs.core.jobs.agent_table.grader import Grade, grade, parse_rows
from runs.core.jobs.agent_table.loop import LOOP_STEPS, AgentTableJob, run_agent_table
from runs.core.jobs.agent_table.watchdog import ReadWatchdog

__all__ = [
    "FIXTURES_DIR",
    "LOOP_STEPS",
    "AgentTableJob",
    "Fixture",
    "Grade",
    "ReadWatchdog",
    "Row",
    "grade",
    "load_fixture",
    "parse_rows",
    "run_agent_table",
]
