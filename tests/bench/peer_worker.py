"""SparkDash as a user runs it, for `make bench-peers`: `manage.py bench` through the worker.

The embedded default (SQLite, the in-memory channel layer, the in-process worker): `manage.py
bench CONFIG --job concurrency --wait` starts a run, the worker thread of that same process runs
the concurrency job, the recorder stores every sample in the database and broadcasts live updates
on the channel layer, and the command prints the finished run as JSON. Every SparkDash process
that works for the run is that one process, so its CPU time (os.wait4, user + system) is the
row's. A throw-away var dir under the race's folder holds the database: migrated once, then the
machine, engine and config loaded from a configs file (`manage.py loadconfigs`), as a user would,
pointing at the race's llama-server on loopback (the engine URL passes the same host check).

The concurrency job's rounds at one level are at most 20 (its `reps` parameter), so a run of more
requests than 20 rounds hold names the level several times (`--levels 1,1,1`): the same requests,
each stored as a sample; the summary keeps the level's last pass, and the race reads its figures
only from runs small enough for one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bench.peer_tools import Done, Setup, timed

CONFIG = "bench-peers-gemma"
MAX_REPS = 20  # the concurrency job's `reps` limit (runs/core/jobs/concurrency/kind.py)
MAX_LEVELS = 16  # its `levels` list's length limit
NOMINAL_BANDWIDTH_GBPS = 100
# The embedded default whatever the caller's environment says (empty URLs select it).
EMBEDDED = {"DATABASE_URL": "", "REDIS_URL": "", "SPARKDASH_WORKER": "inprocess"}


def var_dir(setup: Setup) -> Path:
    return setup.work / "sparkdash-var"


def environment(setup: Setup) -> dict[str, str]:
    return EMBEDDED | {"SPARKDASH_VAR_DIR": str(var_dir(setup))}


def prepare(setup: Setup) -> None:
    """Migrate the throw-away database once and load the race's engine and config into it."""
    var_dir(setup).mkdir(parents=True, exist_ok=True)
    configs = var_dir(setup) / "configs.yaml"
    configs.write_text(_configs_yaml(setup))
    for args in (["migrate", "--noinput", "-v", "0"], ["loadconfigs", str(configs)]):
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            env=_env(setup),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed: {(done.stderr or done.stdout).strip()[-300:]}")


def _env(setup: Setup) -> dict[str, str]:
    return os.environ | environment(setup)


def _configs_yaml(setup: Setup) -> str:
    # No host: the machine is the worker's own box, so only a loopback engine URL is accepted.
    # Its memory is this box's; its bandwidth a nominal figure (the race reads no roofline).
    memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1)
    return "\n".join(
        [
            "machines:",
            f"  - {{name: bench-peers, bandwidth_gbps: {NOMINAL_BANDWIDTH_GBPS}, memory_gb: {memory_gb},",
            "     notes: 'make bench-peers: the race on this box'}",
            "engines:",
            "  - {name: bench-peers-llama, machine: bench-peers, kind: llama-server,",
            f"     url: {json.dumps(setup.url)}}}",
            "configs:",
            f"  - {{name: {CONFIG}, engine: bench-peers-llama, model: {json.dumps(setup.model)}, "
            f"temperature: 0, max_tokens: {setup.tokens}}}",
            "",
        ]
    )


def rounds(streams: int, requests: int) -> tuple[int, int]:
    """(passes over the level, rounds per pass) sending `requests` requests `streams` at a time.

    `requests` must be a whole number of rounds that the job's limits can hold.
    """
    total, left = divmod(requests, streams)
    if left or total < 1:
        raise ValueError(f"{requests} requests are not whole rounds of {streams}")
    for passes in range(1, MAX_LEVELS + 1):
        reps, left = divmod(total, passes)
        if not left and reps <= MAX_REPS:
            return passes, reps
    raise ValueError(f"{total} rounds are more than {MAX_LEVELS} x {MAX_REPS} or not divisible")


def run_worker(setup: Setup, streams: int, requests: int) -> Done:
    """`manage.py bench` of the race's config, `requests` requests `streams` at a time; its CPU."""
    folder = setup.work / f"worker-c{streams}-n{requests}"
    folder.mkdir(parents=True, exist_ok=True)
    passes, reps = rounds(streams, requests)
    argv = [
        sys.executable,
        "manage.py",
        "bench",
        CONFIG,
        "--job",
        "concurrency",
        "--levels",
        ",".join([str(streams)] * passes),
        "--answer-tokens",
        str(setup.tokens),
        "--reps",
        str(reps),
        "--wait",
    ]
    cpu, output = timed(argv, Path.cwd(), environment(setup), log=folder / "tool.log")
    out = folder / "run.json"
    out.write_text(output)
    return Done([out], cpu, note="(1 warm-up request first)", argv=argv, warmups=1)
