"""`make bench` in short mode: the fidelity and overhead benchmarks still run and write their figures."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import BENCHMARKS
from tests.bench.__main__ import COLUMNS

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
