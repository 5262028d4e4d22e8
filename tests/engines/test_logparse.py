"""Engine log lines: draft acceptance in every llama.cpp format, prompt-cache drops, errors."""
from __future__ import annotations

import json

import pytest

from engines.logparse import ACCEPTANCE_RE, LogEvent, parse_line

pytestmark = pytest.mark.backend_free

SLOT = "slot print_timing: id  0 | task 42 | "
# up to b9229; b9230-b9828; b9829 and later (Ollama's b10488 child included)
OLD = "draft acceptance rate = 0.71234 (  512 accepted /   719 generated)"
MIDDLE = "draft acceptance rate = 0.71234 (  512 accepted /   719 generated), mean acceptance length =  3.14"
NEW = "draft acceptance = 0.71234 (  512 accepted /   719 generated), mean len =  3.14"
CACHE_DROP = "srv  alloc:  - prompt state size 812.250 MiB exceeds cache size limit 512.000 MiB, skipping"


@pytest.mark.parametrize(("text", "mean_len"), [(OLD, None), (MIDDLE, 3.14), (NEW, 3.14)])
def test_it_reads_acceptance_in_every_historical_format(text: str, mean_len: float | None) -> None:
    event = parse_line(SLOT + text + "\n")
    assert event == LogEvent(
        "acceptance", SLOT + text, rate=0.71234, accepted=512, generated=719, mean_len=mean_len
    )


def test_it_reads_acceptance_behind_the_log_prefix_and_colours() -> None:
    line = f"\x1b[34m0.12.345.678\x1b[0m \x1b[32mI \x1b[0m{SLOT}{NEW}"
    event = parse_line(line)
    assert event is not None
    assert (event.event, event.accepted, event.generated) == ("acceptance", 512, 719)
    assert event.text == f"0.12.345.678 I {SLOT}{NEW}"


def test_it_reads_acceptance_with_counts_that_fill_the_padding() -> None:
    text = "draft acceptance = 1.00000 (123456 accepted / 123456 generated), mean len = 17.00"
    event = parse_line(SLOT + text)
    assert event is not None
    assert (event.rate, event.accepted, event.generated, event.mean_len) == (1.0, 123456, 123456, 17.0)


def test_it_exports_the_documented_regex() -> None:
    match = ACCEPTANCE_RE.search(NEW)
    assert match is not None
    assert match.groups() == ("0.71234", "512", "719", "3.14")


def test_it_reports_a_prompt_cache_drop_with_its_line() -> None:
    event = parse_line(f"0.01.000.000 W {CACHE_DROP}\n")
    assert event == LogEvent("cache-discard", f"0.01.000.000 W {CACHE_DROP}")


@pytest.mark.parametrize(
    "line",
    [
        "0.00.123.456 E srv    load_model: failed to load model, '/models/x.gguf'",
        "srv    send_error: task id = 7, error: the request exceeds the available context size",
        "error: invalid argument: --draft-max",
        "error while handling argument \"--spec-type\": unknown speculative type",
    ],
)
def test_it_reports_error_lines(line: str) -> None:
    assert parse_line(line) == LogEvent("error", line)


@pytest.mark.parametrize(
    "line",
    [
        "",
        f"{SLOT}prompt eval time =      12.34 ms /    20 tokens (    0.62 ms per token,  1620.75 tokens/s)",
        f"{SLOT}       eval time =     456.78 ms /   128 tokens (    3.57 ms per token,   280.22 tokens/s)",
        "srv  update: - making room for prompt cache entry, removing oldest entry (size = 100.000 MiB)",
        "draft acceptance = n/a",
        "0.00.010.000 I main: server is listening on http://127.0.0.1:8080",
        "0.00.010.000 W srv  load_model: no error: handler registered",  # a warning, not an error
        "Errors are reported in the next line",
        "SparkDash SIMULATOR (not a real engine) listening on http://127.0.0.1:9",
        '{"model":"x","error":"not a log record"}',
    ],
)
def test_it_ignores_other_lines(line: str) -> None:
    assert parse_line(line) is None


def test_it_reads_jsonl_log_records_by_their_level() -> None:
    def record(level: str, msg: str) -> str:
        return json.dumps({"type": "log", "time": 0, "level": level, "msg": msg + "\n"})

    acceptance = parse_line(record("info", SLOT + NEW))
    assert acceptance is not None and acceptance.mean_len == 3.14
    assert parse_line(record("warn", CACHE_DROP)) == LogEvent("cache-discard", CACHE_DROP)
    failed = "srv  load_model: failed"
    assert parse_line(record("error", failed)) == LogEvent("error", failed)
    assert parse_line(record("info", "srv  log: request error: none")) is None
