"""SparkDash's demo engine: a SIMULATOR of a bandwidth-bound inference box.

It speaks Ollama's native API and llama-server's OpenAI-compatible API with timings taken from
a deterministic schedule, so the dashboard can be demoed and tested without a GPU. Drafts are
accepted by the output type a request asks for, read from its text (output_type.py: tool calls
and tables often, Japanese prose almost never), each later draft position less (schedule.py).
A non-streamed chat request with tools gets a scripted agent that falls into a read loop
(agent.py). Every version string it reports contains "sparkdash-simulator". No Django import here.
"""
from .app import ASGIApp, build_app
from .output_type import output_type
from .schedule import ACCEPTANCE_BY_TYPE, FAULTS, OUTPUT_TYPES, Emission, Schedule, SimProfile, plan, schedule
from .server import SimServer, serve_forever, serve_in_thread

__all__ = [
    "ACCEPTANCE_BY_TYPE",
    "FAULTS",
    "OUTPUT_TYPES",
    "ASGIApp",
    "Emission",
    "Schedule",
    "SimProfile",
    "SimServer",
    "build_app",
    "output_type",
    "plan",
    "schedule",
    "serve_forever",
    "serve_in_thread",
]
