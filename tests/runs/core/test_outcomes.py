import pytest

from engines.clients import GenerationRequest, client_for
from engines.errors import (
    EngineCut,
    EngineError,
    EngineHTTPError,
    EngineMalformed,
    EngineTimeout,
    EngineUnreachable,
    NoTokenCount,
)
from engines.simulator import SimProfile, serve_in_thread
from runs.core.outcomes import (
    Failures,
    count_outcomes,
    failed_row,
    failure_reason,
    failures_note,
    over_failed_share,
)

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (EngineHTTPError("x answered HTTP 503", 503), "http 503"),
        (EngineMalformed("malformed SSE line"), "malformed reply"),
        (EngineCut("engine stopped mid-answer"), "stream cut"),
        (EngineTimeout("timed out"), "timeout"),
        (NoTokenCount("no count"), "no token count"),
        (EngineUnreachable("cannot reach"), "engine unreachable"),
        (EngineError("reported an error: out of memory"), "engine error"),
    ],
)
def test_it_names_each_kind_of_failure(error, reason):
    assert failure_reason(error) == reason
    assert failed_row(error) == {"failed": reason, "error": str(error)}


def test_it_counts_attempted_succeeded_failed_cut_and_stopped_early():
    rows = [
        {"finish_reason": "length"}, {"finish_reason": "length"}, {"finish_reason": "stop"},
        {"finish_reason": "tool_calls"}, {"failed": "http 500", "error": "e"},
        {"failed": "http 500", "error": "e"}, {"failed": "stream cut", "error": "e"},
    ]
    outcomes = count_outcomes(rows)
    assert outcomes == {
        "attempted": 7, "succeeded": 4, "failed": 3,
        "failed_by_reason": {"http 500": 2, "stream cut": 1},
        "cut_by_max_tokens": 2, "stopped_early": 1,
        "failed_share": pytest.approx(3 / 7), "over_failed_share": True,
    }
    note = "3 of 7 requests failed (42.9 %: http 500 2, stream cut 1)"
    assert failures_note({"outcomes": outcomes}) == note


def test_it_marks_a_run_only_past_ten_percent_failed():
    ten = [{"failed": "timeout", "error": "e"}] + [{"finish_reason": "stop"}] * 9
    assert count_outcomes(ten)["failed_share"] == pytest.approx(0.1)
    assert not over_failed_share({"outcomes": count_outcomes(ten)})
    assert over_failed_share({"outcomes": count_outcomes(ten[:9])})
    assert not over_failed_share({}) and not over_failed_share(None)
    assert failures_note({"outcomes": count_outcomes(ten[1:])}) == ""


def test_it_stops_at_once_when_the_engine_cannot_be_reached():
    with pytest.raises(EngineUnreachable, match="cannot reach"):
        Failures().failed(EngineUnreachable("cannot reach http://127.0.0.1:9"))


def test_it_stops_after_three_failures_in_a_row_naming_the_first():
    failures = Failures()
    failures.failed(EngineHTTPError("request 1: HTTP 500", 500))
    failures.ok()
    failures.failed(EngineHTTPError("request 3: HTTP 500", 500))
    failures.failed(EngineCut("request 4: cut"))
    with pytest.raises(EngineHTTPError, match=r"3 requests in a row failed.*request 3: HTTP 500") as caught:
        failures.failed(EngineTimeout("request 5: timed out"))
    assert caught.value.status == 500


def test_it_fails_a_run_where_every_request_failed():
    Failures.check_any_succeeded([])
    Failures.check_any_succeeded([{"failed": "timeout", "error": "r1"}, {"finish_reason": "stop"}])
    with pytest.raises(EngineError, match=r"every request failed \(2\); the first: r1"):
        Failures.check_any_succeeded([{"failed": "timeout", "error": f"r{i}"} for i in (1, 2)])


async def test_it_sends_through_a_real_engine_and_records_every_fourth_failing():
    failures = Failures()
    got = []
    profile = SimProfile(decode_tps=500, ttft_ms=5, fault="http-500", fault_every=4)
    with serve_in_thread(profile) as sim:
        async with client_for("llama-server", sim.url) as client:
            request = GenerationRequest("demo", [{"role": "user", "content": "hi"}], max_tokens=4)
            for n in range(1, 9):
                got.append(await failures.send(client, request, f"request {n}"))
    failed = [i + 1 for i, g in enumerate(got) if isinstance(g, dict)]
    assert failed == [4, 8]
    assert got[3]["failed"] == "http 500" and got[3]["error"].startswith("request 4: ")
