"""GuideLLM, the peer harness, in its own virtualenv (never in the project's requirements).

`ensure_guidellm()` creates ~/.cache/sparkdash/guidellm-venv with `pip install torch==2.13.0
guidellm` when it is missing (CPU torch, kept on this machine kind's package mirror);
`run_guidellm()` sends the given prompts synchronously, as our harness does, with our sampling
(temperature 0, seed 0; GuideLLM otherwise leaves sampling to the engine's defaults), and returns
per-request figures computed from GuideLLM's own timestamps with GuideLLM's definitions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runs.core.jobs.prompts import SYSTEM, Prompt

VENV = Path(os.getenv("SPARKDASH_GUIDELLM_VENV", Path.home() / ".cache" / "sparkdash" / "guidellm-venv"))
GUIDELLM = VENV / "bin" / "guidellm"
PACKAGES = ("torch==2.13.0", "guidellm")


def ensure_guidellm(install: bool) -> str | None:
    """None when GuideLLM can run; else why not (installing it first when `install`)."""
    if GUIDELLM.exists():
        return None
    if not install:
        return f"GuideLLM is not installed in {VENV} (only a full run installs it)"
    print(f"installing {' '.join(PACKAGES)} into {VENV} (once)", flush=True)
    steps = ([sys.executable, "-m", "venv", str(VENV)],
             [str(VENV / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *PACKAGES])
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            return f"`{' '.join(argv[-2:])}` failed: {tail[0][:200]}"
    return None


def run_guidellm(url: str, prompts: Sequence[Prompt], tokens: int, workdir: Path) -> list[dict[str, float]]:
    """Each prompt once, one at a time, exactly `tokens` tokens each; per-request figures.

    Raises RuntimeError with GuideLLM's last words when it fails.
    """
    data, out = workdir / "guidellm-prompts.jsonl", workdir / "guidellm.json"
    rows = [{"prompt": p.user, "system_prompt": SYSTEM, "output_tokens_count": tokens} for p in prompts]
    data.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    argv = [
        str(GUIDELLM), "run",
        # Our sampling (greedy, seed 0: GenerationRequest defaults): the engine does the same work for both.
        "--backend", f"kind=openai_http,target={url},request_format=/v1/chat/completions,"
                     "extras.body.temperature=0,extras.body.seed=0",
        "--profile", "kind=synchronous",
        "--constraint", f"kind=max_requests,count={len(rows)}",
        "--data", f"kind=json_file,path={data}",
        "--output", f"kind=json,path={out}",
        "--disable-console-interactive",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=workdir)
    if done.returncode != 0 or not out.exists():
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"guidellm exited {done.returncode}: {tail[:400]}")
    return [_figures(r) for r in json.loads(out.read_text())["benchmarks"][0]["requests"]["successful"]]


def _figures(request: dict[str, Any]) -> dict[str, float]:
    """GuideLLM's definitions: TTFT from request start; output tok/s = tokens / request latency."""
    t = request["info"]["timings"]
    tokens = request["output_metrics"]["text_tokens"]
    return {
        "ttft_s": t["first_token_iteration"] - t["request_start"],
        "output_tps": tokens / (t["request_end"] - t["request_start"]),
        "decode_tps": (tokens - 1) / (t["last_token_iteration"] - t["first_token_iteration"]),
        "e2e_s": t["request_end"] - t["request_start"],
        "output_tokens": tokens,
    }
