"""The replay job: chat requests recorded from a real agent session, sent again N times in order.

Replaying the same requests keeps step-count variance (8-16 steps per task) out of a comparison
between configs. The derived "generation time per task" adds up, over the requests, output
tokens / decode speed, as the seed did for its 700 tool-call and 1,050 answer tokens.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.clients.base import EngineClient, GenerationRequest, as_dict, now
from measure.stats import summarize
from measure.words import gettext_noop
from runs.core import jsonlimits
from runs.core.jobs.progress import RunProgress
from runs.core.outcomes import Failures, count_outcomes, succeeded
from runs.core.refusal import Refusal
from runs.core.request_figures import request_metrics

__all__ = ["ReplayJob", "normalize", "parse_jsonl", "run_replay", "summarize_replay"]

# Without a recorded limit the engine decides the length; this only stops a runaway answer.
DEFAULT_MAX_TOKENS = 4096
# Request fields that pass through unchanged (GenerationRequest.extra): they change the answer.
PASS_THROUGH = ("tools", "tool_choice", "response_format", "stop")
WRAPPERS = ("request", "body")
LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "num_predict")
# What a replay sends when it is given no file: five requests of a coding agent's session.
SAMPLE_REQUESTS = Path(__file__).resolve().parent / "fixtures" / "sample.jsonl"


def parse_jsonl(text: str, max_bytes: int = 5_000_000, max_requests: int = 1000) -> list[dict[str, Any]]:
    """The recorded request bodies of a JSON Lines file, one per non-blank line.

    A line may also hold {"request": body} or {"body": body}, as request loggers write them.
    Raises ValueError naming the line for bad JSON, a missing or empty `messages`, or a file
    too large or with too many requests.
    """
    size = len(text.encode())
    if size > max_bytes:
        raise Refusal(gettext_noop("the file is %(size)s bytes; the limit is %(limit)s"), size=f"{size:,}",
                      limit=f"{max_bytes:,}")
    requests: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(requests) == max_requests:
            raise Refusal(gettext_noop("line %(number)s: more than %(most)s requests"), number=number,
                          most=max_requests)
        requests.append(_parse_line(line, number))
    if not requests:
        raise Refusal(gettext_noop("the file holds no requests"))
    return requests


def _parse_line(line: str, number: int) -> dict[str, Any]:
    try:
        body = jsonlimits.loads(line)
    except jsonlimits.TooDeep as exc:
        raise Refusal(gettext_noop("line %(number)s: %(error)s"), number=number, error=exc) from None
    except ValueError as exc:
        raise Refusal(gettext_noop("line %(number)s: not JSON (%(error)s)"), number=number,
                      error=exc) from None
    if not isinstance(body, dict):
        raise Refusal(gettext_noop("line %(number)s: a request must be a JSON object"), number=number)
    if "messages" not in body:
        body = next((body[k] for k in WRAPPERS if isinstance(body.get(k), dict)), body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refusal(gettext_noop("line %(number)s: no messages (a chat request needs a non-empty list)"),
                      number=number)
    if not all(isinstance(m, dict) and "role" in m for m in messages):
        raise Refusal(gettext_noop("line %(number)s: every message must be an object with a role"),
                      number=number)
    for key, value in _limits(body).items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise Refusal(gettext_noop("line %(number)s: %(key)s must be a whole number, not %(value)s"),
                          number=number, key=key, value=repr(value))
    return body


def _limits(body: dict[str, Any]) -> dict[str, Any]:
    """The answer-length limits a body sets: OpenAI's at the top, Ollama's in options."""
    options = as_dict(body.get("options"))
    found = {k: body[k] for k in LIMIT_KEYS if k in body}
    return found | ({"num_predict": options["num_predict"]} if "num_predict" in options else {})


def normalize(body: dict[str, Any], model_override: str | None = None) -> GenerationRequest:
    """A recorded OpenAI-style or Ollama-style chat body as a GenerationRequest.

    Sampling comes from the body (Ollama's from `options`); temperature 0 and seed 0 unless set.
    Raises ValueError when neither the body nor model_override names a model.
    """
    options = as_dict(body.get("options"))
    merged = {**options, **{k: v for k, v in body.items() if k != "options"}}
    model = model_override or body.get("model")
    if not model:
        raise ValueError("the request names no model; set a model override")
    limit = next((v for v in _limits(body).values() if v is not None), None)
    return GenerationRequest(
        model=model,
        messages=body["messages"],
        max_tokens=limit if isinstance(limit, int) and limit > 0 else DEFAULT_MAX_TOKENS,
        temperature=merged.get("temperature", 0.0),
        top_p=merged.get("top_p"),
        top_k=merged.get("top_k"),
        seed=merged.get("seed", 0),
        extra={k: body[k] for k in PASS_THROUGH if body.get(k) is not None},
    )


@dataclass(frozen=True)
class ReplayJob:
    """Recorded request bodies (as parse_jsonl returns them), sent in order `reps` times.

    :param model_override: the model to ask for instead of the recorded one.
    :param warmup: unrecorded sends of the first request before the first pass.
    """

    requests: Sequence[dict[str, Any]]
    reps: int = 3
    model_override: str | None = None
    warmup: int = 1

    def generation_requests(self) -> list[GenerationRequest]:
        return [normalize(body, self.model_override) for body in self.requests]


async def run_replay(client: EngineClient, job: ReplayJob, progress: RunProgress) -> dict[str, Any]:
    """Replay every request in order, `reps` passes; each is reported as a "request" sample.

    Raises ValueError for a request without a model. A failed request is a row with its reason
    (runs/core/outcomes.py); raises EngineError naming the request when the run must stop.
    """
    requests = job.generation_requests()
    await progress.on_start(job.reps * len(requests))
    failures = Failures()
    for _ in range(job.warmup):
        await failures.send(client, requests[0], "warm-up request")
    rows: list[dict[str, Any]] = []
    walls: list[float] = []
    for rep in range(job.reps):
        started = now()
        for index, request in enumerate(requests):
            where = f"request {index + 1} of {len(requests)}, repetition {rep + 1}"
            gen = await failures.send(client, request, where)
            row = gen if isinstance(gen, dict) else request_metrics(gen)
            rows.append(row | {"index": index, "rep": rep})
            await progress.on_sample("request", rows[-1])
        walls.append(now() - started)
    Failures.check_any_succeeded(rows)
    return summarize_replay(rows, walls)


def generation_s(row: Mapping[str, Any]) -> float | None:
    """Output tokens / decode speed of one request (the client's speed, else the engine's).

    A tool-call answer streams no content the client sees, so only the engine's speed is known.
    """
    tps = row.get("decode_tps_client") or row.get("decode_tps_engine")
    return row["output_tokens"] / tps if tps and row.get("output_tokens") else None


def summarize_replay(all_rows: Sequence[dict[str, Any]], walls: Sequence[float]) -> dict[str, Any]:
    """Per request index: medians over passes; per pass: wall time, generation time and tokens.

    generation_s is the seed's "generation time per task": the sum over requests of output
    tokens / decode speed, as median/min/max over passes; a pass with a failed request has none
    (its sum would be short). Figures are over the requests that succeeded; outcomes over all.
    """
    reps = sorted({r["rep"] for r in all_rows})
    passes = [[r for r in all_rows if r["rep"] == rep] for rep in reps]
    indexes = sorted({r["index"] for r in all_rows})
    rows = succeeded(all_rows)
    return {
        "outcomes": count_outcomes(all_rows),
        "requests": len(indexes),
        "reps": len(reps),
        "wall_s": summarize(walls),
        "generation_s": summarize(_sum_or_none(generation_s(r) for r in p) for p in passes),
        "output_tokens": summarize(_sum_or_none(r.get("output_tokens") for r in p) for p in passes),
        "per_request": [_per_request(i, [r for r in rows if r["index"] == i]) for i in indexes],
    }


def _per_request(index: int, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"index": index, "failed": True}
    return {
        "index": index,
        "e2e_s": _median(r["e2e_s"] for r in rows),
        "ttft_s": _median(r["ttft_s"] for r in rows),
        "ttft_engine_s": _median(r.get("ttft_engine_s") for r in rows),  # the engine's own (vLLM)
        "output_tokens": _median(r["output_tokens"] for r in rows),
        "decode_tps": _median(r["decode_tps_client"] or r["decode_tps_engine"] for r in rows),
        "generation_s": _median(generation_s(r) for r in rows),
        "finish_reason": rows[0]["finish_reason"],
    }


def _median(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _sum_or_none(values: Any) -> float | None:
    """The sum, or None when any request has no figure (a partial sum would mislead)."""
    listed = list(values)
    return None if None in listed else sum(listed)
