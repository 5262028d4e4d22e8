"""Figures no result file can hold, refused naming the file, the level and the field: real files the
tools wrote (tests/fixtures/peers), each edited here the way a user found the defect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from measure import catalog
from runs.core.imports import Level, PeerFile, Unreadable
from runs.core.imports.checks import check_file
from runs.core.imports.detect import read_results

pytestmark = pytest.mark.backend_free

PEERS = Path(__file__).parents[3] / "fixtures" / "peers"


def real(path: str) -> dict:
    return json.loads((PEERS / path).read_text(encoding="utf-8"))


def vllm_ttfts(value: float) -> bytes:
    """vLLM's own c1 file with every TTFT (per request and stated) set to `value` ms."""
    data = real("vllm/vllm-bench-c1.json")
    data["ttfts"] = [value / 1000] * len(data["ttfts"])
    for key in [k for k in data if k.endswith("_ttft_ms")]:
        data[key] = value
    return json.dumps(data).encode()


def test_it_refuses_a_vllm_file_whose_ttfts_are_negative_naming_file_level_and_field():
    with pytest.raises(Unreadable) as refused:
        read_results("vllm-edited.json", vllm_ttfts(-5))
    message = str(refused.value)
    assert message.startswith("vllm-edited.json, level concurrency 1, ttft_s (")
    assert "-0.005 is below 0, impossible for TTFT" in message
    assert message.endswith("Nothing of the file was stored.")


def test_it_refuses_a_vllm_file_with_nan_ttfts():
    with pytest.raises(
        Unreadable,
        match=r"vllm-nan\.json, level concurrency 1, ttft_s \(median\): nan is not "
        "a finite number",
    ):
        read_results("vllm-nan.json", vllm_ttfts(float("nan")))


def test_it_refuses_a_vllm_file_with_nan_ttfts_and_an_output_throughput_of_1e308():
    data = json.loads(vllm_ttfts(float("nan")))
    data["output_throughput"] = 1e308
    with pytest.raises(
        Unreadable, match=r"vllm-nan\.json, level concurrency 1, output_throughput: 1e\+308 tok/s"
    ):
        read_results("vllm-nan.json", json.dumps(data).encode())


def test_it_refuses_an_output_throughput_the_files_own_tokens_and_duration_contradict():
    data = real("vllm/vllm-bench-c1.json")
    data["output_throughput"] = 1e308
    with pytest.raises(
        Unreadable,
        match=r"output_throughput: 1e\+308 tok/s, but the file's own 256 output "
        r"tokens over 4\.25617 s are 60\.1479 tok/s",
    ):
        read_results("vllm-fast.json", json.dumps(data).encode())


def test_it_refuses_a_request_whose_first_token_comes_after_its_last():
    data = real("vllm/vllm-bench-c4.json")
    data["ttfts"][2] = data["latencies"][2] + 0.5
    with pytest.raises(
        Unreadable,
        match=r"level concurrency 4, ttfts\[2\]: TTFT .* s is longer than the "
        r"request's E2E latency",
    ):
        read_results("vllm-late.json", json.dumps(data).encode())


def test_it_refuses_a_stated_ttft_longer_than_the_stated_e2e():
    data = real("guidellm/c1/benchmarks.json")
    stats = data["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    stats["median"] = 1000 * data["benchmarks"][0]["metrics"]["request_latency"]["successful"]["median"] + 50
    with pytest.raises(
        Unreadable,
        match=r"level synchronous, ttft_s \(median\): the TTFTs' median, .* is "
        r"longer than the E2Es' median",
    ):
        read_results("late.json", json.dumps(data).encode())


def test_it_refuses_a_ratio_outside_the_limits_the_catalogue_declares():
    acceptance = catalog.get(catalog.ACCEPTANCE_RATE)
    assert (acceptance.low, acceptance.high) == (0.0, 1.0)
    level = Level("c1", 1, {catalog.ACCEPTANCE_RATE: {"median": 1.2, "min": 1.2, "max": 1.2, "n": 1}})
    with pytest.raises(
        Unreadable,
        match=r"f\.json, level c1, acceptance_rate \(median\): 1\.2 is above 1, "
        "impossible for acceptance rate",
    ):
        check_file("f.json", PeerFile("vllm-bench", "", "", "", [level]))


@pytest.mark.parametrize(
    "path",
    [
        "vllm/vllm-bench-c1.json",
        "sglang/sglang-bench-c4.jsonl",
        "guidellm/c4/benchmarks.yaml",
        "aiperf/c4/profile_export_aiperf.json",
        "llama-bench/llama-bench.md",
        "llama-benchy/llama-benchy-c1-c4.json",
    ],
)
def test_it_lets_every_real_file_through(path):
    assert read_results(Path(path).name, (PEERS / path).read_bytes()).levels
