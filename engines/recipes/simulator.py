"""The SparkDash simulator's extra flags: a managed simulator engine runs ``manage.py simengine``
with the config's extra flags last (runs.worker.engine_session.simulator_recipe), whatever engine
kind it stands in for. Its port, host and log file are SparkDash's; ``manage.py``'s own
``--settings`` and ``--pythonpath`` would load code, so only these pass (engines.recipes.flags)."""
from __future__ import annotations

from engines.recipes.flags import Choice, Flag, FlagTable, Int, Num, Pattern
from measure.words import gettext_noop

__all__ = ["ALLOWED_FLAGS", "FAULTS", "REASONING_STYLES"]

# engines.simulator's FAULTS and REASONING_STYLES (a test holds them equal; that package loads a server).
FAULTS = ("http-500", "malformed", "cut", "hang")
REASONING_STYLES = ("field", "tags")
SHARE = Num(0, 1)
POSITIVE = Num(0, 1e9, above=True)
BY_TYPE = Pattern(r"[a-z-]+=[\d.]+(,[a-z-]+=[\d.]+)*", gettext_noop("type=rate pairs separated by commas"))
ALLOWED_FLAGS = FlagTable("simulator", gettext_noop("simulator"), [
    Flag(("--decode-tps",), POSITIVE, gettext_noop("plain decode speed (tok/s)")),
    Flag(("--ttft-ms",), Num(0, 1e7), gettext_noop("time to first token (ms)")),
    Flag(("--acceptance",), SHARE, gettext_noop("one acceptance rate for every position and type")),
    Flag(("--acceptance-by-type",), BY_TYPE, gettext_noop("first-position acceptance per output type")),
    Flag(("--acceptance-decay",), Num(0, 1, above=True), gettext_noop("acceptance factor per position")),
    Flag(("--lookahead",), Int(0, 64), gettext_noop("draft tokens")),
    Flag(("--draft-cost",), Num(0, 100), gettext_noop("a draft's cost, in target passes")),
    Flag(("--efficiency",), Num(0, 1, above=True), gettext_noop("share of the bandwidth ceiling")),
    Flag(("--max-tokens",), Int(1, 131_072), gettext_noop("default answer length")),
    Flag(("--bandwidth-gbps",), POSITIVE, gettext_noop("memory bandwidth (GB/s)")),
    Flag(("--model-gb",), POSITIVE, gettext_noop("weights read per token (GB)")),
    Flag(("--fault",), Choice(FAULTS), gettext_noop("a fault to inject")),
    Flag(("--fault-after",), Int(0, 1_000_000_000), gettext_noop("tokens before the fault")),
    Flag(("--fault-every",), Int(1, 1_000_000_000), gettext_noop("the fault hits every k-th request")),
    Flag(("--batch-cost",), Num(0, 100), gettext_noop("cost of each extra request in a batch")),
    Flag(("--prefill-tps",), POSITIVE, gettext_noop("prompt processing speed (tok/s)")),
    Flag(("--cache-tokens",), Int(0, 1_000_000_000), gettext_noop("prompt cache limit (tokens)")),
    Flag(("--reasoning-tokens",), Int(0, 1_000_000), gettext_noop("reasoning tokens per answer")),
    Flag(("--reasoning-style",), Choice(REASONING_STYLES), gettext_noop("how reasoning is sent")),
    Flag(("--lossy-drafter",), Int(0, 1_000_000), gettext_noop("every n-th accepted draft token wrong")),
])  # fmt: skip
