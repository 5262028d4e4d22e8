"""Other tools' result files, read into SparkDash's own figures. Plain Python, no Django.

`read_results(name, data)` detects which tool wrote a file (and its version, where the file
records one) and gives a PeerFile: one Level per benchmark or load level, each one imported run
(runs.actions.imports stores them). A file no reader knows, or one cut short, is refused with an
Unreadable naming what was expected; nothing of it is kept.
"""
from __future__ import annotations

from measure.words import gettext_noop
from runs.core.imports.levels import Level, PeerFile, Unreadable

__all__ = ["TOOLS", "Level", "PeerFile", "Unreadable"]

# Each tool SparkDash reads, by the name its runs record, with the name a page shows.
TOOLS: dict[str, str] = {
    "vllm-bench": "vLLM bench serve",
    "sglang-bench": "SGLang bench_serving",
    "guidellm": "GuideLLM",
    "aiperf": "AIPerf",
    "llama-bench": "llama-bench",
    "llama-benchy": "llama-benchy",
}

EXPECTED = gettext_noop(
    "a result file of vLLM bench serve (JSON), SGLang bench_serving (JSONL), GuideLLM (benchmarks "
    "JSON, YAML or CSV), AIPerf (profile_export_aiperf JSON or CSV), llama-bench (-o json, jsonl, csv or "
    "md) or llama-benchy (--format json, csv or md)"
)
