"""SGLang's `bench_serving --output-file` JSON lines: one object per invocation (one level each).

Its fields follow vLLM's benchmark (whose code it began from), with E2E named `e2e_latency`, and
`--output-details` adding per-request TTFTs, ITLs and output lengths (no latencies). SGLang's
definitions: TTFT to the first chunk with text; TPOT = (latency - TTFT) / (output tokens - 1) over
the requests with more than one token; ITL = every gap between chunks; output tokens counted by
SGLang's own tokenizer as well as the server's (`total_output_tokens_retokenized`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from measure.words import gettext_noop
from runs.core.imports.levels import PeerFile
from runs.core.imports.vllm import level_of

__all__ = ["is_sglang", "read_sglang"]

NOTES = {
    "ttft_s": gettext_noop("SGLang's clock: from before its POST to the first chunk with text"),
    "itl_s": gettext_noop("SGLang's ITL is every gap between streamed chunks, pooled over all requests"),
    "tpot_s": gettext_noop("SGLang's TPOT: (latency - TTFT) / (output tokens - 1)"),
    "decode_tps_client": gettext_noop("1 / SGLang's stated TPOT (the file has no per-request latencies)"),
    "total_tps": gettext_noop("SGLang's output throughput: all output tokens / the benchmark's duration"),
}


def is_sglang(data: Any) -> bool:
    """SGLang's lines: objects with its stated medians, E2E named e2e_latency."""
    rows = data if isinstance(data, list) else [data]
    return bool(rows) and all(
        isinstance(r, Mapping) and "median_e2e_latency_ms" in r and "median_ttft_ms" in r for r in rows)


def read_sglang(data: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> PeerFile:
    """One level per line; its figures are the stated ones (per-request values lack latencies)."""
    rows = list(data) if isinstance(data, list) else [data]
    levels = []
    for row in rows:
        renamed = {k.replace("e2e_latency", "e2el"): v for k, v in row.items()
                   if k not in ("ttfts", "itls", "output_lens", "errors")}
        levels.append(level_of(renamed, NOTES))
    first = rows[0]
    return PeerFile(tool="sglang-bench", version=str(first.get("sglang_version", "")), command="",
                    model=str(first.get("model_id", first.get("model", ""))), levels=levels,
                    backend=str(first.get("backend", "")))
