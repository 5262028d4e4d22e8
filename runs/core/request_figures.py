"""Per-request figures, each computed by its one definition in docs/metrics.md, and the run's
pooled drafting figures (acceptance and tokens per verification over all its requests)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engines.clients.base import EngineClient, EngineError, Generation, GenerationRequest
from engines.errors import NoTokenCount
from measure import pooled
from measure.catalog import ACCEPTANCE_RATE, PER_REQUEST, POOLED, TOKENS_PER_VERIFICATION
from measure.stats import summarize

# The figures summarised as a spread over requests (median, range, interval). Acceptance and tokens
# per verification are pooled over the run instead (pooled_drafting); their spreads over requests
# are kept as the secondary "..._per_request" figures.
REQUEST_METRICS = (
    "ttft_s",
    "ttft_engine_s",
    "decode_tps_client",
    "decode_tps_engine",
    "prefill_tps",
    "e2e_s",
    "ttfr_s",
    "ttfo_s",
    "decode_tps_answer",
    "reasoning_tokens",
    "answer_tokens",
)


def decode_tps_client(gen: Generation) -> float | None:
    """(output tokens - 1) / (last token time - first token time), tokens counted by the engine;
    reasoning tokens and their time count, as the engine's output count includes them."""
    tokens = gen.figures.output_tokens
    first, last = gen.first_token_at, gen.last_token_at
    if tokens is None or tokens < 2 or first is None or last is None or last <= first:
        return None
    return (tokens - 1) / (last - first)


def since_sent(gen: Generation, t: float | None) -> float | None:
    """Seconds from sending the request to client time t; None when t is."""
    return t - gen.sent_at if t is not None else None


def answer_tokens(gen: Generation) -> int | None:
    """Output tokens - reasoning tokens; None when either count is unknown."""
    output, reasoning = gen.figures.output_tokens, gen.figures.reasoning_tokens
    if output is None or reasoning is None:
        return None
    return max(output - reasoning, 0)


def decode_tps_answer(gen: Generation) -> float | None:
    """(answer tokens - 1) / (last answer token time - first answer token time)."""
    tokens = answer_tokens(gen)
    first, last = gen.first_answer_at, gen.last_answer_at
    if tokens is None or tokens < 2 or first is None or last is None or last <= first:
        return None
    return (tokens - 1) / (last - first)


def reasoning_metrics(gen: Generation) -> dict[str, Any]:
    """The reasoning ("thinking") figures of one request: TTFR, TTFO, the token split, answer speed."""
    return {
        "ttfr_s": since_sent(gen, gen.first_reasoning_at),
        "ttfo_s": since_sent(gen, gen.first_answer_at),
        "reasoning_tokens": gen.figures.reasoning_tokens,
        "answer_tokens": answer_tokens(gen),
        "reasoning_tokens_source": gen.figures.reasoning_tokens_source,
        "decode_tps_answer": decode_tps_answer(gen),
    }


def prefill_tps(gen: Generation) -> float | None:
    """Newly computed prompt tokens / the engine's prompt time; cached tokens excluded."""
    f = gen.figures
    if f.prompt_tokens is None or not f.prompt_s:
        return None
    new_tokens = f.prompt_tokens - (f.cached_tokens or 0)
    return new_tokens / f.prompt_s if new_tokens > 0 else None


def acceptance_rate(gen: Generation) -> float | None:
    """The request's own acceptance (measure.pooled.acceptance of its counts)."""
    return pooled.acceptance(gen.figures.accepted_tokens, gen.figures.draft_tokens)


def tokens_per_verification(gen: Generation) -> float | None:
    """The request's own tokens per verification (measure.pooled of its counts)."""
    return pooled.tokens_per_verification(gen.figures.accepted_tokens, gen.figures.verifications)


def request_metrics(gen: Generation) -> dict[str, Any]:
    """Every figure of one request, plus the engine's token counts it was computed from."""
    return {
        "ttft_s": since_sent(gen, gen.first_token_at),
        "decode_tps_client": decode_tps_client(gen),
        "decode_tps_engine": gen.figures.decode_tps,
        "prefill_tps": prefill_tps(gen),
        "e2e_s": gen.finished_at - gen.sent_at,
        "sent_at": gen.sent_at,  # the client's clock; the run's recorder makes it run time
        ACCEPTANCE_RATE: acceptance_rate(gen),
        TOKENS_PER_VERIFICATION: tokens_per_verification(gen),
        "output_tokens": gen.figures.output_tokens,
        "output_tokens_source": gen.figures.output_tokens_source,
        "prompt_tokens": gen.figures.prompt_tokens,
        "cached_tokens": gen.figures.cached_tokens,
        pooled.DRAFT_TOKENS: gen.figures.draft_tokens,
        pooled.ACCEPTED_TOKENS: gen.figures.accepted_tokens,
        pooled.VERIFICATIONS: gen.figures.verifications,
        pooled.ACCEPTED_BY_POSITION: gen.figures.accepted_by_position,
        "ttft_engine_s": gen.figures.ttft_s,
        "finish_reason": gen.figures.finish_reason,
    } | reasoning_metrics(gen)


def acceptance_by_position(rows: Iterable[Mapping[str, Any]]) -> list[float] | None:
    """Per draft position i: drafts whose i-th token was accepted / drafts, over the rows.

    Rows without per-position counts (an engine that does not expose them) are left out; None
    when no row has them.
    """
    counts = ((row.get(pooled.ACCEPTED_BY_POSITION), row.get(pooled.VERIFICATIONS)) for row in rows)
    return pooled.acceptance_by_position(*pooled.summed_positions(counts))


POOLED_METRICS = POOLED  # the name migrations/0014 imports (frozen there); PER_REQUEST likewise
# Where a pooled figure's counts came from, as stored (runs/templatetags/run_format.py words them).
FROM_ENGINE, FROM_REQUESTS, FROM_LOG = "engine", "requests", "log"


def pooled_drafting(rows: Iterable[Mapping[str, Any]], intervals: bool = True) -> dict[str, Any]:
    """The run's acceptance and tokens per verification, each pooled over the rows that drafted.

    acceptance = sum of accepted / sum of drafted; tokens per verification = (sum of accepted + sum
    of verifications) / sum of verifications (docs/metrics.md, Acceptance). A row's estimate is
    not averaged: a long answer weighs as much as its drafts. Each is None when no row drafted
    (or, for tokens per verification, when a drafting row does not say how many verifications).
    Beside them, each figure's spread over requests under its "_per_request" key (without its
    intervals if not `intervals`: measure.stats.summarize).
    """
    drafting = [r for r in rows if r.get(pooled.DRAFT_TOKENS) and r.get(pooled.ACCEPTED_TOKENS) is not None]
    accepted = sum(int(r[pooled.ACCEPTED_TOKENS]) for r in drafting)
    drafted = sum(int(r[pooled.DRAFT_TOKENS]) for r in drafting)
    counted = [int(r.get(pooled.VERIFICATIONS) or 0) for r in drafting]
    verifications = sum(counted) if counted and all(counted) else None
    return pooled_figures(accepted, drafted, verifications, FROM_REQUESTS, len(drafting)) | {
        f"{key}{PER_REQUEST}": summarize((r.get(key) for r in drafting), intervals) for key in POOLED
    }


def pooled_figures(
    accepted: int, drafted: int, verifications: int | None, source: str, requests: int | None = None
) -> dict[str, Any]:
    """{ACCEPTANCE_RATE: pooled, TOKENS_PER_VERIFICATION: pooled} from a run's counts (measure.pooled).

    Each pooled figure is {"pooled": value, its counts, "source"}: FROM_ENGINE (the engine's own
    counters over the run), FROM_REQUESTS (summed from each request's counts) or FROM_LOG (the
    engine's log lines); None without drafted tokens (or verifications).
    """
    counts = {"accepted": accepted, "drafted": drafted, "verifications": verifications,
              "requests": requests, "source": source}
    rate = pooled.acceptance(accepted, drafted)
    per_pass = pooled.tokens_per_verification(accepted, verifications) if drafted else None
    return {ACCEPTANCE_RATE: None if rate is None else {"pooled": rate} | counts,
            TOKENS_PER_VERIFICATION: None if per_pass is None else {"pooled": per_pass} | counts}


def pooled_decode(rows: Iterable[Mapping[str, Any]]) -> float | None:
    """Decode tok/s over the run: every request's decode tokens (output - 1) over all their decode
    time, the speed a drafting run's roofline efficiency holds against the pooled tokens per
    verification (a median of per-request speeds against a pooled ratio is not like for like)."""
    tokens = seconds = 0.0
    for row in rows:
        tps, output = row.get("decode_tps_client"), row.get("output_tokens")
        if tps and output and output > 1:
            tokens += output - 1
            seconds += (output - 1) / tps
    return tokens / seconds if seconds else None


# The summary key of the engine's own counters over the run (a SpecDelta.summary()). Stored in every
# run's summary under this older name, so it stays spelled so (a rename would be a data migration).
ENGINE_COUNTERS = "spec_decode_metrics"


def engine_pooled(counters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The pooled figures from the engine's own counters over the run (a `SpecDelta.summary()`:
    drafts, draft_tokens, accepted); {} when the engine counted no drafts, so that what the
    requests said stands."""
    if not counters or not counters.get("drafts") or not counters.get(pooled.DRAFT_TOKENS):
        return {}
    drafted = int(counters[pooled.DRAFT_TOKENS])
    return pooled_figures(int(counters["accepted"]), drafted, int(counters["drafts"]), FROM_ENGINE)


def sources(rows: Iterable[Mapping[str, Any]], field: str) -> list[str]:
    """Where the rows' counts of one sort came from (`field`: "reasoning_tokens_source" or
    "output_tokens_source", docs/metrics.md), each once, sorted."""
    return sorted({str(r[field]) for r in rows if r.get(field)})


async def send(client: EngineClient, request: GenerationRequest, where: str) -> Generation:
    """One request; its errors name `where` ("request 3 of 18 (...)") and keep their class (engines.errors).

    Tokens are never counted from chunks (one chunk may carry several). A reply without the
    engine's token count (a proxy that drops `usage`, a server that sends none) has its streamed
    text, reasoning included, counted by the engine's own tokenizer, and says so
    (`output_tokens_source` "tokenizer"); with no tokenizer to ask it is refused (NoTokenCount).
    """
    try:
        gen = await client.generate(request)
    except EngineError as exc:
        raise exc.reworded(f"{where}: {exc}") from exc
    figures = gen.figures
    if figures.output_tokens is not None:
        figures.output_tokens_source = figures.output_tokens_source or "engine"
        return gen
    counted = await client.count_tokens(gen.reasoning_text + gen.text, request.model)
    if not counted:
        raise NoTokenCount(f"{where}: the engine did not report how many tokens it generated, and has no "
                           "tokenizer endpoint to count them")
    figures.output_tokens, figures.output_tokens_source = counted, "tokenizer"
    return gen

