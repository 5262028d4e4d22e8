"""vLLM's own benchmark (`vllm bench serve`, module vllm.benchmarks.serve), the peer on a vLLM engine.

It runs in the engine's venv (bin/build-vllm), whose `vllm` console script cannot find its
distribution's metadata: the module's own parser and main are called, as `vllm bench serve` does.
The prompts go as a ShareGPT-format JSON file (`--dataset-name sharegpt`), since the `custom`
JSONL reader needs pandas, which the engine's venv lacks (vLLM's optional `bench` extra). Gemma 3's
chat template puts a system message at the head of the first user turn ("SYSTEM\\n\\nuser"), so
that one user message is the same prompt, token for token, as SparkDash's system + user messages.
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runs.core.jobs.prompts import SYSTEM, Prompt

# What the `vllm bench serve` console script does (vllm/entrypoints/cli/benchmark/serve.py).
BENCH_MAIN = (
    "import sys\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "parser = FlexibleArgumentParser(prog='vllm bench serve')\n"
    "add_cli_args(parser)\n"
    "main(parser.parse_args(sys.argv[1:]))\n"
)


def user_message(prompt: Prompt) -> str:
    """The one user message Gemma 3's template renders as SparkDash's system + user messages."""
    return f"{SYSTEM}\n\n{prompt.user}"


def run_vllm_bench(
    python: Path, url: str, model_dir: Path, prompts: Sequence[Prompt], tokens: int,
    concurrency: int, workdir: Path,
) -> dict[str, Any]:
    """The prompts in order, at most `concurrency` at a time, exactly `tokens` tokens each, with
    SparkDash's sampling (temperature 0, seed 0, ignore_eos); vLLM's result JSON, per request too.

    Raises RuntimeError with the benchmark's last words when it fails.
    """
    data, out = workdir / "vllm-bench-prompts.json", workdir / "vllm-bench.json"
    rows = [{"conversations": [{"from": "human", "value": user_message(p)}, {"from": "gpt", "value": ""}]}
            for p in prompts]
    data.write_text(json.dumps(rows, ensure_ascii=False))
    out.unlink(missing_ok=True)
    argv = [str(python), "-c", BENCH_MAIN, *_flags(url, model_dir, data, len(rows), tokens, concurrency, out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, cwd=workdir)
    if done.returncode != 0 or not out.exists():
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"vllm bench serve exited {done.returncode}: {tail[:400]}")
    result = json.loads(out.read_text())
    if result.get("failed"):
        raise RuntimeError(f"vllm bench serve: {result['failed']} requests failed: {result.get('errors')}")
    return result


def _flags(
    url: str, model_dir: Path, data: Path, n: int, tokens: int, concurrency: int, out: Path
) -> list[str]:
    """`vllm bench serve`'s flags: SparkDash's endpoint, prompts in their order, its sampling."""
    return [
        "--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--base-url", url,
        "--model", str(model_dir), "--served-model-name", "gemma", "--tokenizer", str(model_dir),
        "--dataset-name", "sharegpt", "--dataset-path", str(data), "--disable-shuffle",
        "--num-prompts", str(n), "--output-len", str(tokens), "--ignore-eos",
        "--temperature", "0", "--extra-body", '{"seed": 0}', "--max-concurrency", str(concurrency),
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50",
        "--save-result", "--save-detailed", "--result-dir", str(out.parent), "--result-filename", out.name,
        "--disable-tqdm",
    ]  # fmt: skip


def per_request(result: dict[str, Any]) -> list[dict[str, float]]:
    """vLLM's per-request figures, by its definitions (vllm/benchmarks/serve.py calculate_metrics):
    TTFT from just before the POST to the first chunk with choices (the role chunk); latency to the
    last chunk with choices; TPOT = (latency - TTFT) / (output tokens - 1); ITLs between chunks."""
    rows = []
    for ttft, latency, tokens, itls, start in zip(
        result["ttfts"], result["latencies"], result["output_lens"], result["itls"], result["start_times"],
        strict=True,
    ):
        rows.append({
            "ttft_s": ttft, "e2e_s": latency, "output_tokens": tokens, "itls": itls, "start": start,
            "tpot_s": (latency - ttft) / (tokens - 1) if tokens > 1 else None,
        })  # fmt: skip
    return rows
