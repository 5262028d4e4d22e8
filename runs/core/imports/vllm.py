"""vLLM's `vllm bench serve --save-result` JSON (and SGLang's bench_serving lines, its close cousin).

vLLM's definitions (vllm/benchmarks/serve.py): TTFT from just before the POST to the first
streamed chunk with text; TPOT = (latency - TTFT) / (output tokens - 1), per request, over the
successful ones; ITL = every gap between chunks, pooled over all requests; output tokens are the
server's `usage` where vLLM reads it, else vLLM's own tokenizer count of the text. Only
`--save-detailed` files have per-request values; without them the stated percentiles are kept.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from measure.words import gettext_noop
from runs.core.imports.checks import number
from runs.core.imports.levels import (
    Impossible,
    Level,
    PeerFile,
    inverse,
    inverse_spread,
    one_value,
    spread_from_stats,
    spreads,
)
from runs.core.refusal import Refusal

__all__ = ["is_vllm", "level_of", "read_vllm"]

NOTES = {
    "ttft_s": gettext_noop("vLLM's clock: from before its POST to the first chunk with text"),
    "itl_s": gettext_noop("vLLM's ITL is every gap between streamed chunks, pooled over all requests"),
    "total_tps": gettext_noop("vLLM's output throughput: all output tokens / the benchmark's duration"),
    "tpot_s": gettext_noop("vLLM's TPOT: (latency - TTFT) / (output tokens - 1), the inverse of decode"),
    "decode_tps_client": gettext_noop("1 / vLLM's per-request TPOT; output tokens are the server's usage "
                                      "if vLLM read it, else vLLM's own tokenizer count"),
}
TTFT_AFTER_E2E = gettext_noop("TTFT %(ttft)s s is longer than the request's E2E latency, %(e2e)s s")
THROUGHPUT_DIFFERS = gettext_noop("%(stated)s tok/s, but the file's own %(tokens)s output tokens over "
                                  "%(duration)s s are %(computed)s tok/s")
THROUGHPUT_SLACK = 0.01  # the tool's own division, written with every digit: 1 % is rounding to spare
STATED = {"ttft_s": "median_ttft_ms", "tpot_s": "median_tpot_ms", "itl_s": "median_itl_ms",
          "e2e_s": "median_e2el_ms"}


def is_vllm(data: Any) -> bool:
    """A vLLM result: one object with vLLM's stated medians (e2el, not SGLang's e2e_latency)."""
    return (isinstance(data, Mapping) and "median_ttft_ms" in data and "completed" in data
            and "median_e2e_latency_ms" not in data
            and ("median_e2el_ms" in data or "endpoint_type" in data or "ttfts" in data))


def read_vllm(data: Mapping[str, Any]) -> PeerFile:
    """One level: the file is one `bench serve` invocation at one concurrency or request rate."""
    level = level_of(data, NOTES)
    return PeerFile(
        tool="vllm-bench", version=str(data.get("vllm_version", "")), command="",
        model=str(data.get("model_id", "")), levels=[level], backend=str(data.get("backend", "")),
        base_url=str(data.get("base_url", "")),
    )


def level_of(data: Mapping[str, Any], notes: Mapping[str, str]) -> Level:
    """One invocation's level: per-request spreads where the file has them, else its stated ones."""
    concurrency = data.get("max_concurrency")
    rate = data.get("request_rate")
    label = f"concurrency {concurrency}" if concurrency else f"request rate {rate}"
    rows, failures = _requests(data, label)
    figures: dict[str, Any] = spreads(rows, ("ttft_s", "e2e_s", "tpot_s", "decode_tps_client"))
    itls = [gap for row in rows for gap in row["itls"]]
    if itls:
        figures |= spreads(({"itl_s": gap} for gap in itls), ("itl_s",))
    if not rows:
        figures |= _stated_spreads(data)
    if total := one_value(_throughput(data, label)):
        figures["total_tps"] = total
    stated = {key: data[name] / 1000 for key, name in STATED.items()
              if isinstance(data.get(name), int | float)}
    return Level(
        label=label, concurrency=concurrency if isinstance(concurrency, int) else None, figures=figures,
        stated=stated, attempted=int(data.get("completed", 0)) + sum(failures.values()),
        failed_by_reason=dict(failures), notes=dict(notes), started=_started(data),
    )


def _requests(data: Mapping[str, Any], label: str) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The successful requests' figures, and the failed ones counted by error (kept as failures);
    a request whose first token came after its last is refused (Impossible)."""
    ttfts, outputs = data.get("ttfts") or [], data.get("output_lens") or []
    latencies = data.get("latencies") or data.get("e2e_latencies") or [None] * len(ttfts)
    itls, errors = data.get("itls") or [[]] * len(ttfts), data.get("errors") or [""] * len(ttfts)
    rows, failures = [], Counter[str]()
    for index, (ttft, latency, tokens, gaps, error) in enumerate(
            zip(ttfts, latencies, outputs, itls, errors, strict=False)):
        if error:
            failures[_reason(str(error))] += 1
            continue
        if isinstance(latency, int | float) and ttft > latency:
            why = Refusal(TTFT_AFTER_E2E, ttft=number(ttft), e2e=number(latency))
            raise Impossible(label, f"ttfts[{index}]", why)
        tpot = (latency - ttft) / (tokens - 1) if latency is not None and tokens > 1 else None
        rows.append({"ttft_s": ttft, "e2e_s": latency, "tpot_s": tpot, "decode_tps_client": inverse(tpot),
                     "itls": list(gaps or [])})
    if not errors and isinstance(data.get("failed"), int) and data["failed"]:
        failures["failed (the file gives no reason)"] += data["failed"]
    return rows, failures


def _throughput(data: Mapping[str, Any], label: str) -> Any:
    """The stated output throughput, refused (Impossible) where the file's own output tokens over its
    duration say otherwise: the tool computes it as exactly that."""
    stated, tokens, duration = (data.get(k) for k in ("output_throughput", "total_output_tokens", "duration"))
    if not (isinstance(stated, int | float) and isinstance(tokens, int | float)
            and isinstance(duration, int | float) and duration > 0):
        return stated
    computed = tokens / duration
    if math.isfinite(stated) and not math.isclose(stated, computed, rel_tol=THROUGHPUT_SLACK):
        why = Refusal(THROUGHPUT_DIFFERS, stated=number(stated), tokens=number(tokens),
                      duration=number(duration), computed=number(computed))
        raise Impossible(label, "output_throughput", why)
    return stated


def _reason(error: str) -> str:
    """An error's first line, short: requests are counted by it."""
    return (error.strip().splitlines() or ["error"])[-1][:120]


def _stated_spreads(data: Mapping[str, Any]) -> dict[str, Any]:
    """Without per-request values: the stated median with the stated p-low / p-high as its range."""
    found = {}
    n = data.get("completed")
    for key, name in STATED.items():
        median = data.get(name)
        stem = name.removeprefix("median_")
        spread = spread_from_stats(median, data.get(f"p1_{stem}", median), data.get(f"p99_{stem}", median), n,
                                   scale=1 / 1000, mean=data.get(f"mean_{stem}"))
        if spread:
            found[key] = spread
    if "tpot_s" in found:
        tpot = found["tpot_s"]
        found["decode_tps_client"] = inverse_spread(tpot)
    return found


def _started(data: Mapping[str, Any]) -> str | None:
    date = data.get("date")  # vLLM writes "%Y%m%d-%H%M%S"
    if isinstance(date, str) and len(date) == 15 and date[8] == "-":
        return f"{date[:4]}-{date[4:6]}-{date[6:8]}T{date[9:11]}:{date[11:13]}:{date[13:15]}"
    return None
