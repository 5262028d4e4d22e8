"""`make bench` in short mode: the fidelity and overhead benchmarks still run and write their figures."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import BENCHMARKS
from tests.bench.__main__ import COLUMNS, _chosen
from tests.bench.agreement import _split_evals, engine_timings_in

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"name", "value", "unit", "reference", "reference_name", "ratio", "goal", "met", "note"}


@pytest.mark.timeout(120)
def test_it_runs_the_short_benchmarks_and_writes_every_figure(tmp_path):
    out = tmp_path / "bench.json"
    argv = [sys.executable, "-m", "tests.bench", "--short", "--only", "fidelity,overhead", "--out", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["short"] is True
    assert list(report["benchmarks"]) == ["fidelity", "overhead"]
    fidelity = {f["name"]: f for f in report["benchmarks"]["fidelity"]["figures"]}
    for streams in ("1 stream", "16 streams"):
        ttft = fidelity[f"TTFT error p99 ({streams})"]
        assert ttft["unit"] == "ms" and ttft["value"] >= 0 and ttft["goal"] == "< 0.5 ms"
        assert ttft["ratio"] == pytest.approx(ttft["value"] / ttft["reference"])
        assert f"gap error max ({streams})" in fidelity
        assert fidelity[f"decode tok/s error p99 ({streams})"]["unit"] == "%"
    overhead = report["benchmarks"]["overhead"]["figures"]
    sustained = [f for f in overhead if f["name"].startswith("tok/s sustained on one core")]
    assert sustained and all(f["value"] > 0 and f["met"] in (True, False) for f in sustained)
    assert all(set(f) == KEYS for f in [*fidelity.values(), *overhead])
    assert all(column in done.stdout for column in COLUMNS)


def test_it_refuses_an_unknown_benchmark():
    argv = [sys.executable, "-m", "tests.bench", "--only", "nope"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "unknown benchmark(s) nope" in done.stderr
    assert "fidelity" in BENCHMARKS


def test_it_leaves_out_the_benchmarks_it_is_told_to_skip():
    assert _chosen("", "vllm_agreement") == [name for name in BENCHMARKS if name != "vllm_agreement"]
    assert _chosen("fidelity,overhead", "overhead") == ["fidelity"]
    with pytest.raises(SystemExit, match="unknown benchmark"):
        _chosen("", "vllm-agreement")


def _timing_lines(task: int, prompt_ms: float, prompt_n: int, eval_ms: float, eval_n: int) -> str:
    """One request's timing lines as llama-server b11434 logs them."""
    head = f"0.02.222.331 I slot print_timing: id  0 | task {task} | "
    return (f"{head}prompt eval time =     {prompt_ms:.2f} ms /    {prompt_n} tokens (  7.66 ms per token)\n"
            f"{head}       eval time =      {eval_ms:.2f} ms /     {eval_n} tokens (   26.15 ms per token)\n"
            f"{head}      total time =     {prompt_ms + eval_ms:.2f} ms /    {prompt_n + eval_n} tokens\n")


def test_it_reads_each_requests_engine_timings_from_the_llama_server_log():
    log = "srv  log_server_r: request: POST /v1/chat/completions 200\n" + "".join(
        _timing_lines(task, 60.0 + task, 5, 2400.0, 95) for task in range(7)
    )
    timings = engine_timings_in(log)
    assert timings[0] == (60.0, 5, 2400.0, 95)
    assert [t[0] for t in timings] == [60.0 + task for task in range(7)]
    # warm-up 1, ours 2, GuideLLM's 2, ours 2, in the order served
    split = _split_evals(timings, 1, 2, 2, 2)
    assert [t[0] for t in split["ours"]] == [61.0, 62.0, 65.0, 66.0]
    assert [t[0] for t in split["guidellm"]] == [63.0, 64.0]
    assert _split_evals(timings, 1, 2, 3, 2) is None  # a request too many or few: no guessing


def test_it_counts_the_share_of_each_requests_tokens_that_a_window_holds():
    from tests.bench.worker_threads_probe import tokens_within

    requests = [
        {"start_t": 0.0, "ttft_s": 1.0, "e2e_s": 3.0, "output_tokens": 40},  # decodes 1-3 s: half inside
        {"start_t": 2.0, "ttft_s": 0.5, "e2e_s": 1.5, "output_tokens": 10},  # 2.5-3.5 s: all inside
        {"start_t": 5.0, "ttft_s": 0.5, "e2e_s": 1.0, "output_tokens": 99},  # after the window
        {"start_t": 2.0, "ttft_s": 1.0, "e2e_s": 1.0, "output_tokens": 1},  # one token, at 3 s
        {"start_t": 2.0, "ttft_s": None, "e2e_s": 1.0, "output_tokens": None},  # failed
    ]
    assert tokens_within(requests, 2.0, 4.0) == pytest.approx(20 + 10 + 1)
