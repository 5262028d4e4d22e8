"""The same engine for every tool in `make bench-peers`: each tool's run at a level begins with none of
its prompts in llama-server's slots.

llama-server keeps each slot's last prompt and reuses it for a request that shares its start. The
race runs the tools one after another on one engine, so the tool that came second with the same
prompt found the slots warm. At 16 streams that moved the engine's own prompt time from 2.5 to
2.9 s (cold) to 0.25 to 0.45 s (warm), and the TTFT offset over it with it: the core alone read
+28 ms warm and +151 to +165 ms cold, the worker +29 to +32 ms cold (December 2026, this 2-core
machine). Before each tool's run, `cool` fills every slot with a prompt of random words that no
tool sends, so each tool meets the same cold engine. vllm bench's random prompts and
llama-benchy's own always met it cold.
"""

from __future__ import annotations

import random
import string
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

__all__ = ["WORDS", "cool"]

WORDS = 120  # per filler prompt: a few hundred tokens, longer than the race's shared start
_LOGGED_S = 10.0  # how long the engine may take to log the fillers' timings once they answered
PROMPT_EVAL = "prompt eval time"


def cool(url: str, log: Path, slots: int) -> None:
    """Send `slots` filler requests at once (one token each) and wait until the engine logged them all,
    so that none of their timings lands among the next tool's."""
    since = log.stat().st_size
    with ThreadPoolExecutor(slots) as pool:
        for response in pool.map(lambda _: _filler(url), range(slots)):
            response.raise_for_status()
    deadline = time.monotonic() + _LOGGED_S
    while _logged(log, since) < slots:
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama-server did not log the {slots} filler requests' timings")
        time.sleep(0.05)


def _filler(url: str) -> httpx.Response:
    words = " ".join("".join(random.choices(string.ascii_lowercase, k=6)) for _ in range(WORDS))
    body = {"messages": [{"role": "user", "content": words}], "max_tokens": 1, "temperature": 0}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=300)


def _logged(log: Path, since: int) -> int:
    """Requests timed in the log after byte `since` (the race's log grows over the whole race)."""
    with log.open("rb") as f:
        f.seek(since)
        return f.read().decode(errors="replace").count(PROMPT_EVAL)
