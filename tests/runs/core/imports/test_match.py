"""A result file against the config it is attached to: model names compared as docs/imports.md says,
the engine a file names against the config's, on real files the tools wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runs.core.imports.detect import read_results
from runs.core.imports.match import Mismatched, Target, mismatches, model_key

pytestmark = pytest.mark.backend_free

PEERS = Path(__file__).parents[3] / "fixtures" / "peers"
SIM_MOE = Target(
    config="sim-moe-mtp8",
    model="/models/sim-moe-80b-a3b-Q4_K_M.gguf",
    quantization="Q4_K_M",
    engine="sim-llama (simulator)",
    kind="llama-server",
    simulator=True,
)
GEMMA = Target(
    config="gemma",
    model="/models/gemma3-270m-q4_k_m.gguf",
    quantization="Q4_K_M",
    engine="llama",
    kind="llama-server",
    simulator=False,
)


def guidellm_with_model(model: str) -> bytes:
    data = json.loads((PEERS / "guidellm/c1/benchmarks.json").read_text())
    data["config"]["spec"]["backend"]["model"] = model
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    "one, other",
    [
        ("/root/.cache/sparkdash/engine/models/gemma3-270m-q4_k_m.gguf", "google/gemma-3-270m"),
        ("gemma3:270m", "GEMMA_3_270M"),
        ("gemma3 270M Q4_K - Medium", "gemma3-270m-Q4_K_M.gguf"),  # llama-bench's own description
        ("/root/.cache/sparkdash/engine/models/gemma3-270m-hf", "gemma-3-270m"),
        ("unsloth/Qwen3-30B-A3B-GGUF", "qwen3-30b-a3b-q8_0.gguf"),
    ],
)
def test_it_compares_model_names_without_case_separators_paths_or_quantization(one, other):
    assert model_key(one)[0] == model_key(other)[0]


@pytest.mark.parametrize("one, other", [("gemma-3-270m", "gemma-3-270m-it"), ("gemma-3-270m", "gemma-3-1b")])
def test_it_keeps_different_models_apart(one, other):
    assert model_key(one)[0] != model_key(other)[0]


def test_it_refuses_a_guidellm_file_of_another_model_naming_both_sides():
    peer = read_results("benchmarks.json", guidellm_with_model("gemma-3-270m"))
    (found,) = mismatches(peer, SIM_MOE)
    assert (found.what, found.file, found.config) == ("model", "gemma-3-270m", SIM_MOE.model)
    assert str(found.sentence) == (
        "the file's model is gemma-3-270m; config sim-moe-mtp8 serves "
        "/models/sim-moe-80b-a3b-Q4_K_M.gguf on sim-llama (simulator)"
    )
    assert "does not match the config it is attached to" in str(Mismatched("benchmarks.json", [found]))


def test_it_finds_no_mismatch_in_a_file_that_names_no_model():
    peer = read_results("benchmarks.json", (PEERS / "guidellm/c1/benchmarks.json").read_bytes())
    assert peer.model == "" and mismatches(peer, SIM_MOE) == []


def test_it_accepts_the_real_files_on_the_llama_server_they_measured():
    for path in (
        "aiperf/c1/profile_export_aiperf.json",
        "vllm/vllm-bench-c1.json",
        "sglang/sglang-bench-c1.jsonl",
        "llama-bench/llama-bench.json",
        "llama-bench/llama-bench.md",
    ):
        assert mismatches(read_results(Path(path).name, (PEERS / path).read_bytes()), GEMMA) == [], path


def test_it_refuses_another_quantization_of_the_same_model():
    peer = read_results("llama-bench.json", (PEERS / "llama-bench/llama-bench.json").read_bytes())
    q8 = Target("gemma-q8", "gemma3-270m-Q8_0.gguf", "Q8_0", "llama", "llama-server", False)
    (found,) = mismatches(peer, q8)
    assert (found.what, found.file, found.config) == ("quantization", "Q4_K_M", "Q8_0")


def test_it_refuses_llama_bench_on_the_simulator_it_cannot_have_measured():
    peer = read_results("llama-bench.json", (PEERS / "llama-bench/llama-bench.json").read_bytes())
    sim_gemma = Target("sim-gemma", "gemma3-270m", "", "sim-llama (simulator)", "llama-server", True)
    (found,) = mismatches(peer, sim_gemma)
    assert found.what == "engine" and "inside its own process" in str(found.sentence)


def test_it_refuses_a_backend_that_names_another_engine_and_not_a_generic_one():
    data = json.loads((PEERS / "vllm/vllm-bench-c1.json").read_text())
    assert mismatches(read_results("v.json", json.dumps(data).encode()), GEMMA) == []  # openai-chat
    data["backend"] = "vllm"
    (found,) = mismatches(read_results("v.json", json.dumps(data).encode()), GEMMA)
    assert str(found.sentence) == (
        "the file's backend is vllm, a vllm engine; config gemma runs on llama, a llama-server engine"
    )
