"""traffic.stats over record dicts (and rows): buckets, shares summed before dividing, TTFT percentiles."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import TrafficRecordFactory
from traffic.serialize import record_json
from traffic.stats import (
    bucket_seconds,
    by_output_type,
    errors,
    generation_share,
    new_input_share,
    per_bucket,
    percentile,
    ttft_percentiles,
    window_start,
    window_stats,
)

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

def _old(figure):
    """The keys every spread has had: median, min, max, n (newer ones add intervals and percentiles)."""
    return {k: figure[k] for k in ("median", "min", "max", "n")}



def rec(minute: float = 0, **figures):
    """A record dict as record_json gives it, `minute` minutes after START."""
    base = {"arrived": (START + timedelta(minutes=minute)).isoformat(), "status": 200, "error": "",
            "output_type": "tool-call", "decode_tps_client": 40.0, "ttft_s": 0.5}
    return base | figures


def test_it_buckets_an_hour_by_the_minute_with_empty_minutes_and_errors():
    records = [rec(0.1), rec(0.9, status=500, error="engine said 500"), rec(2.5), rec(59.99)]
    buckets = per_bucket(records, START, START + timedelta(hours=1))
    assert len(buckets) == 60
    assert [b["requests"] for b in buckets[:4]] == [2, 0, 1, 0]
    assert [b["errors"] for b in buckets[:3]] == [1, 0, 0]
    assert buckets[59]["requests"] == 1
    assert buckets[1]["t"] == (START + timedelta(minutes=1)).isoformat()
    assert buckets[0]["per_minute"] == 2


def test_it_keeps_about_sixty_buckets_for_a_day_and_gives_requests_per_minute():
    assert bucket_seconds(15 * 60) == 60
    assert bucket_seconds(3600) == 60
    assert bucket_seconds(24 * 3600) == 24 * 60
    buckets = per_bucket([rec(1), rec(2), rec(3)], START, START + timedelta(hours=24))
    assert len(buckets) == 60
    assert buckets[0]["requests"] == 3
    assert buckets[0]["per_minute"] == pytest.approx(3 / 24)


def test_it_starts_a_window_on_a_buckets_boundary():
    end = START + timedelta(hours=5, minutes=7, seconds=42)
    assert window_start(end, 3600) == START + timedelta(hours=4, minutes=7)
    day = window_start(end, 24 * 3600)
    assert day.timestamp() % (24 * 60) == 0
    assert day <= end - timedelta(hours=24) < day + timedelta(minutes=24)
    stats = window_stats([], window_start(end, 3600), end)
    assert (stats["bucket_s"], len(stats["buckets"])) == (60, 61)


def test_it_sums_new_prompt_tokens_before_dividing():
    # The mean of the two ratios would be 8 %; the share is of all prompt tokens sent.
    records = [rec(prompt_tokens=1000, new_prompt_tokens=100), rec(prompt_tokens=3000, new_prompt_tokens=180),
               rec(prompt_tokens=None, new_prompt_tokens=50), rec(prompt_tokens=0, new_prompt_tokens=0)]
    share = new_input_share(records)
    assert share == {"share": pytest.approx(0.07), "new_prompt_tokens": 280, "prompt_tokens": 4000, "n": 2}
    assert new_input_share([rec()]) is None


def test_it_gives_generations_share_of_the_end_to_end_time():
    records = [rec(generation_s=3.0, e2e_s=4.0), rec(generation_s=1.5, e2e_s=2.0),
               rec(generation_s=None, e2e_s=9)]
    assert generation_share(records)["share"] == pytest.approx(0.75)
    assert generation_share(records)["n"] == 2


def test_it_interpolates_ttft_percentiles_and_reports_n():
    figure = ttft_percentiles([rec(ttft_s=float(v)) for v in range(1, 101)])
    assert figure["p50"] == pytest.approx(50.5)
    assert figure["p90"] == pytest.approx(90.1)
    assert figure["p99"] == pytest.approx(99.01)
    assert figure["n"] == 100
    assert figure["note"] == ""
    assert percentile([3.0], 99) == 3.0


def test_it_says_p99_is_about_the_slowest_request_below_a_hundred():
    figure = ttft_percentiles([rec(ttft_s=v) for v in (0.2, 0.3, 0.4, 0.5, 9.0)] + [rec(ttft_s=None)])
    assert figure["n"] == 5
    assert figure["p99"] == pytest.approx(9.0 - 0.04 * 8.5)
    assert "only 5 requests" in figure["note"] and "slowest" in figure["note"]
    assert ttft_percentiles([rec(ttft_s=None)]) is None


def test_it_counts_errors_by_text_or_status():
    records = [rec(), rec(status=429), rec(error="client went away", status=200), rec()]
    assert errors(records) == {"count": 2, "n": 4, "share": 0.5,
                               "by_cause": [["HTTP 429", 1], ["client went away", 1]]}
    assert errors([]) == {"count": 0, "n": 0, "share": None, "by_cause": []}


def test_it_counts_relay_failures_by_their_cause_without_the_engines_url():
    gone = "cannot reach the engine at http://127.0.0.1:8080: Server disconnected without sending a response."
    records = [rec(error=gone, status=502), rec(error=gone.replace("8080", "8081"), status=502),
               rec(status=500), rec()]
    assert errors(records)["by_cause"] == [
        ["cannot reach the engine: Server disconnected without sending a response.", 2], ["HTTP 500", 1]]


def test_it_gives_decode_speed_and_acceptance_by_output_type_over_time():
    records = [
        rec(0.1, decode_tps_client=40.0, accepted_tokens=9, draft_tokens=10),
        rec(0.2, decode_tps_client=50.0, accepted_tokens=1, draft_tokens=90),
        rec(0.3, decode_tps_client=90.0, accepted_tokens=None, draft_tokens=None),
        rec(5.0, output_type="prose-ja", decode_tps_client=20.0, accepted_tokens=1, draft_tokens=10),
        rec(6.0, output_type="", decode_tps_client=None),  # no answer: no type to chart
    ]
    figures = by_output_type(records, START, START + timedelta(hours=1))
    assert set(figures) == {"tool-call", "prose-ja"}
    tool = figures["tool-call"]
    # Acceptance sums tokens over the requests that drafted (10 of 100), not the mean of rates.
    point = {"t": START.isoformat(), "decode_tps": 50.0, "acceptance": pytest.approx(0.1), "n": 3}
    assert tool["points"] == [point]
    assert _old(tool["decode_tps"]) == {"median": 50.0, "min": 40.0, "max": 90.0, "n": 3}
    assert figures["prose-ja"]["points"][0]["t"] == (START + timedelta(minutes=5)).isoformat()
    assert figures["prose-ja"]["acceptance"] == pytest.approx(0.1)


def test_it_leaves_records_outside_the_window_out():
    records = [rec(-1), rec(0), rec(30, status=500), rec(61)]
    stats = window_stats(records, START, START + timedelta(hours=1))
    assert stats["requests"] == 2
    assert stats["errors"]["count"] == 1
    assert sum(b["requests"] for b in stats["buckets"]) == 2


@pytest.mark.django_db
def test_it_reads_rows_and_their_json_alike():
    now = datetime.now(UTC)
    rows = [TrafficRecordFactory(arrived=now - timedelta(minutes=m), ttft_s=0.1 * m, prompt_tokens=1000,
                                 new_prompt_tokens=10 * m) for m in range(1, 6)]
    start, end = now - timedelta(hours=1), now
    assert window_stats(rows, start, end) == window_stats([record_json(r) for r in rows], start, end)
    assert window_stats(rows, start, end)["new_input_share"]["share"] == pytest.approx(150 / 5000)


def test_it_keeps_the_engines_rate_of_an_answer_not_streamed_out_of_the_decode_figure():
    # decode tok/s on the page is the relay's own timing (docs/metrics.md); an answer that was not
    # streamed has none, and its engine-reported rate is shown on its row only, marked.
    streamed = rec(0.1, decode_tps_client=40.0, decode_tps_engine=41.0)
    whole = rec(0.2, decode_tps_client=None, decode_tps_engine=52.0)  # Ollama, "stream": false
    figure = by_output_type([streamed, whole], START, START + timedelta(minutes=1))["tool-call"]
    assert (figure["decode_tps"]["median"], figure["decode_tps"]["n"], figure["n"]) == (40.0, 1, 2)
