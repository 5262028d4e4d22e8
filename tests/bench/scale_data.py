"""The scale benchmark's data: runs and samples written into Postgres in bulk, kept for reuse.

Each size has its own database (sparkdash_bench, sparkdash_bench_short, sparkdash_bench_tiny);
a marker table says which size and generator version it holds, so a later run reuses it
instead of writing 10 million samples again. Runs are written with COPY; samples by COPYing a
pool of values and each run's count, then one INSERT ... SELECT in the server. Samples are
speed-job "request" rows shaped as runs.core.request_figures.request_metrics writes them; runs carry
a real speed summary.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

VERSION = 2
POOL = 1009  # distinct sample values, cycled
MARKER = "bench_scale_marker"
LOG_LINE = "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200 (took 412 ms)"


@dataclass(frozen=True)
class Size:
    """How much to generate: runs, samples in all, and how many runs hold `big_samples` each."""

    name: str
    runs: int
    samples: int
    big_runs: int
    big_samples: int = 10_000
    machines: int = 10
    configs_per_machine: int = 4

    def sample_counts(self) -> list[int]:
        """Samples per run: the big runs first, the rest spread evenly over the others."""
        rest, small = self.samples - self.big_runs * self.big_samples, self.runs - self.big_runs
        each, extra = divmod(rest, small)
        return [self.big_samples] * self.big_runs + [each + (i < extra) for i in range(small)]


SIZES = {
    "full": Size("full", runs=10_000, samples=10_000_000, big_runs=10),
    "short": Size("short", runs=1_000, samples=100_000, big_runs=2),
    "tiny": Size("tiny", runs=200, samples=30_000, big_runs=2),
}


def holds(size: Size) -> bool:
    """Whether the database already holds this size from this generator version."""
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", [MARKER])
        if not cur.fetchone()[0]:
            return False
        cur.execute(f"SELECT runs, samples, version FROM {MARKER}")
        return cur.fetchone() == (size.runs, size.samples, VERSION)


def generate(size: Size) -> dict[str, float]:
    """Fill the (freshly migrated, empty) database; seconds taken per table."""
    rng = random.Random(8)
    started = time.perf_counter()
    configs = _configs(size)
    counts = size.sample_counts()
    _copy_runs(configs, counts, rng)
    runs_s = time.perf_counter() - started
    _copy_samples(counts, rng)
    samples_s = time.perf_counter() - started - runs_s
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
        cur.execute(f"CREATE TABLE {MARKER} (runs int, samples bigint, version int)")
        cur.execute(f"INSERT INTO {MARKER} VALUES (%s, %s, %s)", [size.runs, size.samples, VERSION])
    return {"runs_s": runs_s, "samples_s": samples_s, "total_s": time.perf_counter() - started}


def _configs(size: Size) -> list[Any]:
    """Machines (in one team), an engine on each, configs on each engine (the ORM: a few rows)."""
    from engines.models import Engine, EngineConfig, Machine

    team = _team()
    configs = []
    for m in range(size.machines):
        extra = {"team": team} if team is not None else {}
        machine = Machine.objects.create(
            name=f"spark-{m:02d}", bandwidth_gbps=273.0, memory_gb=121.0, **extra
        )
        engine = Engine.objects.create(
            machine=machine, name=f"llama-{m:02d}", kind="llama-server",
            base_url=f"http://127.0.0.1:{18000 + m}",
        )
        for c in range(size.configs_per_machine):
            configs.append(EngineConfig.objects.create(
                engine=engine, name=f"qwen3-{m:02d}-{c}", model="qwen3-coder-30b-a3b",
                quantization="Q4_K_M", lookahead=2 * c, max_tokens=256,
            ))
    return configs


def _team() -> Any:
    from engines import models

    team_model = getattr(models, "Team", None)
    return team_model.default() if team_model is not None else None


def _copy_runs(configs: list[Any], counts: list[int], rng: random.Random) -> None:
    summaries = [_summary(rng) for _ in range(50)]
    provenance = {c.pk: _text(_provenance(c)) for c in configs}
    columns = (
        "config_id, machine_id, job, params, status, created, started, finished, heartbeat, "
        "progress_done, progress_total, summary, provenance, error, warnings, engine_log"
    )
    start = datetime(2025, 1, 1, tzinfo=UTC)
    log = _escape("\n".join([LOG_LINE] * 200))
    big_log = _escape("\n".join([LOG_LINE] * 5000))
    with connection.cursor() as cur, cur.copy(f"COPY runs_run ({columns}) FROM STDIN") as copy:
        for i, n in enumerate(counts):
            config = configs[i % len(configs)]
            created = start + timedelta(minutes=50 * i)
            status = _status(i, len(counts))
            done = status != "queued"
            ended = (created + timedelta(seconds=5 + n)).isoformat()
            copy.write("\t".join((
                str(config.pk), str(config.engine.machine_id), "speed",
                _text({"reps": max(1, n // 10), "max_tokens": 256}), status, created.isoformat(),
                (created + timedelta(seconds=5)).isoformat() if done else r"\N",
                ended if status in ("succeeded", "failed") else r"\N", ended if done else r"\N",
                str(n), str(n), summaries[i % len(summaries)] if status == "succeeded" else "{}",
                provenance[config.pk] if done else "{}", "", "[]", big_log if n >= 10_000 else log,
            )) + "\n")


def _status(i: int, total: int) -> str:
    """Mostly succeeded; a few failed; the newest few running or queued (the home page shows them)."""
    if i >= total - 3:
        return "queued"
    if i >= total - 6:
        return "running"
    return "failed" if i % 25 == 7 else "succeeded"


def _copy_samples(counts: list[int], rng: random.Random) -> None:
    """COPY a pool of 1,009 sample values and each run's count, then expand them in the server.

    The table's indexes and unique/primary keys are dropped for the load and built again
    after it (faster than keeping 10 million rows indexed row by row); FK checks are skipped
    for the session since every run_id comes from runs_run.
    """
    with connection.cursor() as cur:
        cur.execute("SET session_replication_role = replica; SET maintenance_work_mem = '512MB'")
        cur.execute("CREATE TEMP TABLE bench_pool (i int PRIMARY KEY, v jsonb)")
        cur.execute("CREATE TEMP TABLE bench_counts (run_id bigint PRIMARY KEY, n int)")
        with cur.copy("COPY bench_pool (i, v) FROM STDIN") as copy:
            for i in range(POOL):
                copy.write(f"{i}\t{_text(_request_values(rng, i))}\n")
        cur.execute("SELECT id FROM runs_run ORDER BY id")
        run_ids = [row[0] for row in cur.fetchall()]
        with cur.copy("COPY bench_counts (run_id, n) FROM STDIN") as copy:
            copy.write("".join(f"{run_id}\t{n}\n" for run_id, n in zip(run_ids, counts, strict=True)))
        rebuild = _drop_indexes(cur)
        # A nested loop over the runs in id order keeps each run's samples together on disk, as
        # a live run's batches are (a hash join would scatter them in pool order).
        cur.execute("ANALYZE bench_pool; SET enable_hashjoin = off; SET enable_mergejoin = off")
        cur.execute(
            "INSERT INTO runs_sample (run_id, seq, t, kind, values) "
            "SELECT c.run_id, q, q * 0.41, 'request', p.v FROM bench_counts c "
            "CROSS JOIN LATERAL generate_series(0, c.n - 1) q "
            f"JOIN bench_pool p ON p.i = (c.run_id * 7 + q) % {POOL}"
        )
        for statement in rebuild:
            cur.execute(statement)
        cur.execute("RESET enable_hashjoin; RESET enable_mergejoin; SET session_replication_role = DEFAULT")
        cur.execute("DROP TABLE bench_pool, bench_counts")


def _drop_indexes(cur: Any) -> list[str]:
    """Drop runs_sample's keys and indexes; the statements that build them again."""
    cur.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'runs_sample'::regclass AND contype IN ('p', 'u')"
    )
    constraints = cur.fetchall()
    cur.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'runs_sample' "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'runs_sample'::regclass)"
    )
    indexes = cur.fetchall()
    for name, _ in constraints:
        cur.execute(f'ALTER TABLE runs_sample DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cur.execute(f'DROP INDEX "{name}"')
    rebuild = [f'ALTER TABLE runs_sample ADD CONSTRAINT "{n}" {d}' for n, d in constraints]
    return rebuild + [d for _, d in indexes]


def _request_values(rng: random.Random, i: int) -> dict[str, Any]:
    output = rng.randint(64, 256)
    draft = output * 2
    accepted = int(draft * rng.uniform(0.3, 0.8))
    tps = rng.uniform(30.0, 80.0)
    return {
        "ttft_s": rng.uniform(0.05, 0.5), "decode_tps_client": tps,
        "decode_tps_engine": tps * rng.uniform(1.0, 1.03), "prefill_tps": rng.uniform(800, 3000),
        "e2e_s": output / tps + 0.2, "acceptance_rate": accepted / draft,
        "tokens_per_verification": rng.uniform(1.5, 3.5), "output_tokens": output,
        "prompt_tokens": rng.randint(40, 900), "cached_tokens": 0, "draft_tokens": draft,
        "accepted_tokens": accepted, "finish_reason": "length",
        "prompt": ["tool-call-en", "table-en", "prose-en", "prose-ja"][i % 4],
        "output_type": ["tool-call", "table", "prose-en", "prose-ja"][i % 4], "rep": i % 3,
    }


def _summary(rng: random.Random) -> str:
    from runs.core.jobs.speed.loop import summarize_speed

    return _text(summarize_speed([_request_values(rng, i) for i in range(30)]))


def _provenance(config: Any) -> dict[str, Any]:
    return {
        "engine_version": {"version": "b6543", "commit": "abc1234"}, "model": {"id": config.model},
        "quantization": config.quantization, "launch": "external", "config": config.snapshot(),
        "harness_commit": "0" * 40, "recorded": "2025-01-01T00:00:00+00:00",
    }


def _text(value: Any) -> str:
    """JSON as a COPY text-format field."""
    return _escape(json.dumps(value))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
