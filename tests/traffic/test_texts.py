"""traffic.texts: the Traffic page's figures and relay state as text."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from traffic.stats import window_stats
from traffic.texts import figure_texts, relay_texts

pytestmark = pytest.mark.backend_free

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def relay(**state):
    base = {"addresses": {"openai": "http://0.0.0.0:8081"}, "upstream": "http://127.0.0.1:8080", "age_s": 2.4,
            "stale": False, "accepted": 10, "stored": 9, "buffered": 1, "dropped": 0, "last_error": ""}
    return base | state


def test_it_writes_dashes_for_a_window_without_requests():
    texts = figure_texts(window_stats([], START, START + timedelta(hours=1)))
    assert texts == {"requests": "0 requests", "errors": "0 of 0", "ttft": "\u2014", "ttft_note": "",
                     "new_input_share": "\u2014", "generation_share": "\u2014", "by_output_type": {}}


def test_it_writes_a_spread_and_acceptance_per_output_type():
    records = [{"arrived": START + timedelta(seconds=s), "status": 200, "error": "", "output_type": "table",
                "decode_tps_client": tps, "accepted_tokens": 46, "draft_tokens": 50, "ttft_s": 0.2}
               for s, tps in ((1, 30.0), (2, 34.0))]
    texts = figure_texts(window_stats(records, START, START + timedelta(hours=1)))
    assert texts["by_output_type"] == {
        "table": "decode 32.0 [30.0\u201334.0] tok/s (n=2) \u00b7 acceptance 92.0 % \u00b7 2 requests"}
    assert texts["ttft"] == "p50 0.20 s \u00b7 p90 0.20 s \u00b7 p99 0.20 s (n=2)"


def test_it_tells_how_to_start_a_relay_and_when_one_stopped():
    none = relay_texts(None, "spark-1")
    assert none["state"] == "no relay running: start one with make relay MACHINE=spark-1"
    live = relay_texts(relay(), "spark-1")
    assert live["state"] == ("relay: openai at http://0.0.0.0:8081, to http://127.0.0.1:8080; "
                             "last heartbeat 2 s ago")
    assert live["counters"] == "accepted 10 \u00b7 stored 9 \u00b7 buffered 1 \u00b7 dropped 0"
    stopped = relay_texts(relay(stale=True, age_s=300, last_error="connection refused"), "spark-1")
    assert stopped["state"].endswith("last heartbeat 300 s ago: it has probably stopped; start it again with "
                                     "make relay MACHINE=spark-1")
    assert stopped["counters"].endswith("database error: connection refused")
