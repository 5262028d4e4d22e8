"""traffic.warnings: a continuation that recomputed most of its prompt, and one path read 12 times."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from traffic.warnings import (
    DISCARD_MIN_PROMPT,
    READ_LOOP_AT,
    cache_discards,
    engine_log_warnings,
    read_loops,
    traffic_warnings,
)
from traffic.warnings import by_conversation as grouped

pytestmark = pytest.mark.backend_free

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def step(n: int, conversation: str = "c0ffee00" * 4, **figures):
    """Step n of a conversation, n minutes after START; a continuation served mostly from the cache."""
    base = {"id": n, "arrived": START + timedelta(minutes=n), "conversation": conversation, "turn": 2 * n + 1,
            "prompt_tokens": 4000 + 500 * n, "new_prompt_tokens": 300, "tool_calls": []}
    return base | figures


def reads(n: int, path: str, name: str = "read_file", **figures):
    return step(n, tool_calls=[{"name": name, "path": path}], **figures)


def test_it_flags_a_continuation_that_recomputed_most_of_its_prompt():
    records = [step(0, new_prompt_tokens=4000), step(1), step(2, prompt_tokens=5000, new_prompt_tokens=4600),
               step(3)]
    found = cache_discards(grouped(records))
    assert len(found) == 1
    warning = found[0]
    assert (warning["kind"], warning["conversation"], warning["step"], warning["record"]) == (
        "prefix-cache-discard", "c0ffee00" * 4, 3, 2)
    assert warning["arrived"] == (START + timedelta(minutes=2)).isoformat()
    assert "conversation c0ffee00, step 3 at 2026-12-01 10:02:00" in warning["message"]
    assert "4,600 of 5,000 prompt tokens (92%)" in warning["message"]


def test_it_never_flags_a_conversations_first_request():
    # The first step computes its whole prompt: there was nothing to cache yet.
    assert cache_discards(grouped([step(0, new_prompt_tokens=4000), step(1)])) == []


def test_it_flags_only_more_than_half_of_a_prompt_of_a_thousand_tokens():
    half = DISCARD_MIN_PROMPT * 2
    records = [
        step(0), step(1, prompt_tokens=DISCARD_MIN_PROMPT - 1, new_prompt_tokens=DISCARD_MIN_PROMPT - 1),
        step(2, prompt_tokens=half, new_prompt_tokens=half // 2),
        step(3, prompt_tokens=DISCARD_MIN_PROMPT, new_prompt_tokens=DISCARD_MIN_PROMPT // 2 + 1),
        step(4, prompt_tokens=None, new_prompt_tokens=None),
    ]
    assert [w["step"] for w in cache_discards(grouped(records))] == [4]


def test_it_orders_steps_by_arrival_whatever_order_they_come_in():
    records = [step(2, new_prompt_tokens=4000), step(0, new_prompt_tokens=4000)]
    assert [w["record"] for w in cache_discards(grouped(records))] == [2]


def test_it_flags_a_path_read_twelve_times_in_one_conversation():
    records = [reads(n, "src/routes.py") for n in range(READ_LOOP_AT + 3)]
    records.insert(3, reads(99, "src/other.py"))
    found = read_loops(grouped(records))
    assert READ_LOOP_AT == 12
    assert len(found) == 1
    warning = found[0]
    assert (warning["kind"], warning["path"], warning["reads"], warning["record"]) == (
        "read-loop", "src/routes.py", READ_LOOP_AT + 3, READ_LOOP_AT - 1)
    assert "read src/routes.py 12 times by 2026-12-01 10:11:00" in warning["message"]


def test_it_counts_only_read_tools_with_a_path_in_the_same_conversation():
    eleven = [reads(n, "a.py", name="cat") for n in range(READ_LOOP_AT - 1)]
    others = [
        reads(20, "a.py", name="write_file"), reads(21, "a.py", name="search"), reads(22, "", name="read"),
        reads(23, "a.py", conversation="another" * 4), reads(24, "a.py", conversation=""),
    ]
    assert read_loops(grouped(eleven + others)) == []
    assert len(read_loops(grouped([*eleven, reads(30, "a.py", name="view")]))) == 1


def test_it_lists_both_kinds_in_the_order_they_happened():
    records = [reads(n, "a.py") for n in range(READ_LOOP_AT)]
    records.append(step(1, conversation="d" * 32, prompt_tokens=3000, new_prompt_tokens=3000))
    records.append(step(0, conversation="d" * 32))
    assert [w["kind"] for w in traffic_warnings(records)] == ["prefix-cache-discard", "read-loop"]


def test_it_turns_the_engines_log_lines_inside_the_window_into_discard_warnings():
    start = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    line = "srv  alloc:  - prompt state size 29.351 MiB exceeds cache size limit 4.000 MiB, skipping"
    items = [{"at": (start - timedelta(minutes=1)).isoformat(), "line": "before the window"},
             {"at": (start + timedelta(minutes=5)).isoformat(), "line": line}]
    [warning] = engine_log_warnings(items, start)
    assert (warning["kind"], warning["conversation"]) == ("prefix-cache-discard", "")
    message = warning["message"]
    assert "12:05:00" in message and line in message and "--cache-ram" in message


def test_each_warning_keeps_its_english_message_and_carries_its_template_and_figures():
    records = [reads(n, "a.py") for n in range(READ_LOOP_AT)]
    records += [step(0, conversation="d" * 32), step(1, conversation="d" * 32, new_prompt_tokens=4400)]
    items = [{"at": START.isoformat(), "line": "exceeds cache size limit"}]
    found = traffic_warnings(records) + engine_log_warnings(items, START)
    assert {w["kind"] for w in found} == {"prefix-cache-discard", "read-loop"} and len(found) == 3
    for warning in found:  # a page shows gettext(text) % params; stored and exported, message stays
        assert warning["message"] == warning["text"] % warning["params"]
        assert json.loads(json.dumps(warning["params"])) == warning["params"]
