from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from engines.models import Engine, EngineConfig
from engines.simulator import SimProfile, serve_in_thread
from measure.stats import summarize
from runs.actions import alerts
from runs.actions.alerts import check_execution, is_regression, noise_band, post_alerts
from runs.actions.sweeps import start_sweep
from runs.models import Alert, Run, Schedule, Sweep, SweepExecution
from runs.signals import execution_finished
from tests.factories import (
    EngineConfigFactory,
    RunFactory,
    ScheduleFactory,
    SweepFactory,
    telemetry,
    throttled_warning,
)

# --- The rule, without a database --------------------------------------------------------------


def spread(median: float, low: float, high: float, n: int = 9) -> dict[str, Any]:
    return {"median": median, "min": low, "max": high, "n": n}


def test_it_flags_a_drop_beyond_the_noise_floor():
    base = spread(100, 99.5, 100.5)
    assert is_regression(base, spread(80, 79.5, 80.5, 3), True, 3.0)
    assert not is_regression(base, spread(99, 98.5, 99.5, 3), True, 3.0)
    assert noise_band(base, spread(99, 98.5, 99.5, 3), True, 3.0) == pytest.approx(3.0)


def test_it_counts_a_drop_within_the_baselines_worse_side_as_noise():
    base = spread(100, 90, 101)
    assert noise_band(base, spread(92, 92, 92, 3), True, 3.0) == 10
    assert not is_regression(base, spread(92, 92, 92, 3), True, 3.0)
    assert is_regression(base, spread(89, 89, 89, 3), True, 3.0)


def test_it_counts_a_drop_within_the_current_spread_as_noise():
    # This run's best value reaches back to the baseline: not shown to be worse.
    assert not is_regression(spread(100, 100, 100), spread(80, 70, 100, 3), True, 3.0)


def test_it_judges_lower_is_better_metrics_the_other_way():
    base = spread(0.100, 0.098, 0.104)
    assert is_regression(base, spread(0.130, 0.128, 0.131, 3), False, 3.0)
    assert not is_regression(base, spread(0.070, 0.069, 0.071, 3), False, 3.0)
    assert not is_regression(base, spread(0.1035, 0.103, 0.104, 3), False, 3.0)


def _old(figure: dict[str, Any]) -> dict[str, Any]:
    return {k: figure[k] for k in ("median", "min", "max", "n")}


def test_it_takes_the_noise_band_from_the_intervals_not_the_ranges():
    # 19 steady runs near 100 and one at 80: a range down to 80, an interval close to 100.
    base = summarize([100 + (i - 9) * 0.05 for i in range(19)] + [80.0])
    current = summarize([96.0, 96.1, 95.9])
    assert base["median"] - base["min"] > 4  # the range rule would call a 4 % drop noise
    assert noise_band(base, current, True, 3.0) == pytest.approx(3.0, abs=0.01)
    assert is_regression(base, current, True, 3.0)


def test_it_keeps_the_range_rule_for_stored_spreads_without_intervals():
    old_base = spread(100, 80, 101)
    assert noise_band(old_base, spread(96, 95.9, 96.1, 3), True, 3.0) == 20
    with_ci = {**old_base, "median_ci": [99.5, 100.5]}
    assert noise_band(with_ci, spread(96, 95.9, 96.1, 3), True, 3.0) == pytest.approx(3.0)


def test_it_never_flags_an_improvement():
    assert not is_regression(spread(100, 100, 100), spread(150, 150, 150, 3), True, 0.0)


# --- Checking sweep runs built from stored runs -------------------------------------------------


def speed_summary(decode: float) -> dict[str, Any]:
    return {
        "decode_tps_client": spread(decode, decode - 0.2, decode + 0.2, 6),
        "decode_tps_engine": spread(decode, decode, decode, 6),
        "ttft_s": spread(0.1, 0.1, 0.1, 6),
    }


def scheduled(sweep: Sweep, decodes: list[float], *, trigger: str = "schedule", ago_h: float = 0,
              **run_fields: Any) -> SweepExecution:
    """A finished sweep run whose speed runs of the sweep's config measured `decodes`."""
    when = timezone.now() - timedelta(hours=ago_h)
    execution = SweepExecution.objects.create(sweep=sweep, trigger=trigger, created=when, finished=when)
    fields = {"status": Run.Status.SUCCEEDED} | run_fields
    for rep, decode in enumerate(decodes, start=1):
        RunFactory(config=sweep.configs.get(), execution=execution, repetition=rep,
                   params={"reps": 1, "warmup": 0}, summary=speed_summary(decode), **fields)
    return execution


def nights(sweep: Sweep, *decodes: list[float]) -> list[SweepExecution]:
    """One scheduled sweep run per list, oldest first, a day apart."""
    return [scheduled(sweep, d, ago_h=24 * (len(decodes) - i)) for i, d in enumerate(decodes)]


@pytest.fixture
def sweep() -> Sweep:
    return SweepFactory(configs=[EngineConfigFactory(name="cfg-a")], repetitions=3)


BASELINE = [[100.0, 100.4, 99.8], [100.2, 99.9, 100.1], [100.0, 100.3, 99.7]]


@pytest.mark.django_db
def test_it_raises_an_alert_per_worse_metric_of_a_scheduled_sweep_run(sweep):
    nights(sweep, *BASELINE)
    slow = scheduled(sweep, [80.0, 80.2, 79.9])
    raised = check_execution(slow)
    assert sorted(a.metric for a in raised) == ["decode_tps_client", "decode_tps_engine"]
    alert = Alert.objects.get(metric="decode_tps_client")
    assert (alert.execution, alert.config.name) == (slow, "cfg-a")
    assert (alert.job, alert.benchmark) == ("speed", "Speed")
    assert alert.label == "decode (client)"
    assert _old(alert.baseline) == {"median": 100.0, "min": 99.7, "max": 100.4, "n": 9}
    assert _old(alert.value) == {"median": 80.0, "min": 79.9, "max": 80.2, "n": 3}
    low, high = alert.baseline["median_ci"]
    assert 99.7 <= low <= 100.0 <= high <= 100.4
    assert alert.delta_pct == pytest.approx(-20.0)
    assert alert.resolved is None


def agent_night(sweep: Sweep, ago_h: float, score: int, answered: int) -> SweepExecution:
    """A finished scheduled sweep run of three agent-table runs that each answered like this."""
    when = timezone.now() - timedelta(hours=ago_h)
    execution = SweepExecution.objects.create(sweep=sweep, trigger="schedule", created=when, finished=when)
    summary = {"score": score, "rows": 47, "answer_rows": answered, "precision": score / answered,
               "f1": 2 * score / (47 + answered), "exact": score == answered == 47, "outcome": "completed",
               "task_s": 60.0}
    for rep in (1, 2, 3):
        RunFactory(config=sweep.configs.get(), execution=execution, repetition=rep, job="agent-table",
                   params={"fixture": "routes_47"}, summary=summary, status=Run.Status.SUCCEEDED)
    return execution


@pytest.mark.django_db
def test_it_alerts_on_the_agent_tables_f1_and_exact_when_rows_are_padded(sweep):
    for ago_h in (72, 48, 24):
        agent_night(sweep, ago_h, 47, 47)
    raised = check_execution(agent_night(sweep, 0, 47, 560))
    assert sorted(a.metric for a in raised) == ["exact", "f1"]
    fewer = check_execution(agent_night(sweep, -1, 40, 40))
    assert "score" not in {a.metric for a in fewer} and "f1" in {a.metric for a in fewer}


@pytest.mark.django_db
def test_it_alerts_on_a_drop_inside_the_baselines_range_but_outside_its_interval(sweep):
    # One slow baseline run (90) widens the range to 10 % below the median; the interval stays near 100.
    nights(sweep, [100.0, 100.4, 99.8], [100.2, 99.9, 100.1], [100.0, 100.3, 90.0])
    raised = check_execution(scheduled(sweep, [95.0, 95.1, 94.9]))
    assert "decode_tps_client" in [a.metric for a in raised]


@pytest.mark.django_db
def test_it_takes_a_one_percent_change_for_noise(sweep):
    nights(sweep, *BASELINE)
    assert check_execution(scheduled(sweep, [99.0, 99.1, 98.9])) == []


@pytest.mark.django_db
def test_it_applies_the_sweeps_noise_floor(sweep):
    sweep.noise_floor_pct = 0.5
    sweep.save()
    nights(sweep, *BASELINE)
    raised = check_execution(scheduled(sweep, [99.0, 99.1, 98.9]))
    assert {a.metric for a in raised} == {"decode_tps_client", "decode_tps_engine"}


@pytest.mark.django_db
def test_it_needs_earlier_scheduled_sweep_runs_for_a_baseline(sweep):
    scheduled(sweep, [100.0] * 3, trigger="manual", ago_h=48)
    scheduled(sweep, [100.0] * 3, trigger="manual", ago_h=24)
    assert check_execution(scheduled(sweep, [50.0] * 3)) == []


@pytest.mark.django_db
def test_it_wants_two_earlier_sweep_runs_in_the_baseline():
    one, two = (SweepFactory(configs=[EngineConfigFactory()]) for _ in range(2))
    nights(one, [100.0, 100.0, 100.0])
    nights(two, [100.0], [100.0])
    assert check_execution(scheduled(one, [50.0])) == []
    assert len(check_execution(scheduled(two, [50.0]))) == 2


@pytest.mark.django_db
def test_it_compares_with_the_last_five_scheduled_sweep_runs_only(sweep):
    nights(sweep, [60.0] * 3, [60.0] * 3, *[[100.0] * 3] * 5)
    assert check_execution(scheduled(sweep, [80.0] * 3))[0].baseline["n"] == 15


@pytest.mark.django_db
def test_it_leaves_failed_runs_out(sweep):
    nights(sweep, *BASELINE)
    current = scheduled(sweep, [100.0, 100.1, 99.9])
    RunFactory(config=sweep.configs.get(), execution=current, status=Run.Status.FAILED,
               summary=speed_summary(10.0))
    assert check_execution(current) == []


@pytest.mark.django_db
def test_it_keeps_open_alerts_out_of_the_baseline_until_resolved(sweep):
    nights(sweep, *BASELINE)
    first = check_execution(scheduled(sweep, [80.0] * 3, ago_h=12))
    # Still slow the next night: the open alerts keep 80 out of the baseline, so it alerts again.
    again = check_execution(scheduled(sweep, [80.0] * 3, ago_h=6))
    assert len(first) == len(again) == 2
    assert again[0].baseline["n"] == 9
    for alert in [*first, *again]:
        assert alerts.resolve(alert)
    # Resolved: 80 is accepted as the norm.
    assert check_execution(scheduled(sweep, [80.0] * 3)) == []


@pytest.mark.django_db
def test_it_checks_each_config_apart():
    a, b = EngineConfigFactory(name="cfg-a"), EngineConfigFactory(name="cfg-b")
    sweep = SweepFactory(configs=[a, b])
    for ago in (48, 24, 0):
        when = timezone.now() - timedelta(hours=ago)
        execution = SweepExecution.objects.create(
            sweep=sweep, trigger="schedule", created=when, finished=when
        )
        for config, decode in ((a, 100.0), (b, 50.0 if ago == 0 else 100.0)):
            RunFactory.create_batch(2, config=config, execution=execution, status=Run.Status.SUCCEEDED,
                                    summary=speed_summary(decode))
    assert {x.config.name for x in check_execution(execution)} == {"cfg-b"}


@pytest.mark.django_db
def test_it_checks_a_sweep_run_once(sweep):
    nights(sweep, *BASELINE)
    slow = scheduled(sweep, [80.0] * 3)
    assert len(check_execution(slow)) == 2
    assert check_execution(slow) == []
    assert Alert.objects.count() == 2


@pytest.mark.django_db
def test_it_checks_only_scheduled_sweep_runs_when_they_finish(sweep):
    nights(sweep, *BASELINE)
    manual = scheduled(sweep, [50.0] * 3, trigger="manual")
    execution_finished.send(sender=SweepExecution, execution=manual)
    assert not Alert.objects.exists()
    slow = scheduled(sweep, [50.0] * 3)
    execution_finished.send(sender=SweepExecution, execution=slow)
    assert Alert.objects.filter(execution=slow).count() == 2


# --- The webhook ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def loopback_webhooks(settings):
    """These tests' webhook listens on loopback, which the policy refuses unless the operator allows
    it (tests/runs/actions/test_webhooks.py shows the refusals)."""
    settings.SPARKDASH_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]


@dataclass
class Hook:
    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200


@contextmanager
def webhook(status: int = 200) -> Iterator[Hook]:
    """A local HTTP server that records the JSON bodies POSTed to it."""
    hook = Hook("", status=status)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            hook.bodies.append(json.loads(body))
            self.send_response(hook.status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.url = f"http://127.0.0.1:{server.server_port}/hooks/secret-token-123"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()


def _slow_night(sweep: Sweep, url: str) -> SweepExecution:
    sweep.webhook_url = url
    sweep.save()
    nights(sweep, *BASELINE)
    slow = scheduled(sweep, [80.0] * 3)
    check_execution(slow)
    return slow


@pytest.mark.django_db
def test_it_posts_a_sweep_runs_alerts_once(sweep):
    with webhook() as hook:
        slow = _slow_night(sweep, hook.url)
        assert post_alerts(slow) == "delivered (HTTP 200)"
        assert post_alerts(slow) is None
    assert len(hook.bodies) == 1
    body = hook.bodies[0]
    assert (body["sweep"], body["sweep_run"]) == (sweep.name, slow.pk)
    assert body["sweep_run_path"] == f"/sweep-runs/{slow.pk}/"
    first = body["alerts"][0]
    assert (first["config"], first["metric"], first["unit"]) == ("cfg-a", "decode_tps_client", "tok/s")
    assert first["baseline"]["median"] == 100.0
    assert first["value"]["median"] == 80.0
    assert "secret-token" not in json.dumps(body)
    assert set(Alert.objects.values_list("webhook_outcome", flat=True)) == {"delivered (HTTP 200)"}


@pytest.mark.django_db
def test_it_records_an_error_answer_as_failed(sweep):
    with webhook(status=500) as hook:
        assert post_alerts(_slow_night(sweep, hook.url)) == "delivery failed (HTTP 500)"


@pytest.mark.django_db
def test_it_records_an_unreachable_webhook_without_its_url(sweep):
    with webhook() as hook:
        url = hook.url
    outcome = post_alerts(_slow_night(sweep, url))  # the server is gone: connection refused
    assert outcome == "delivery failed"  # not why: a refused port and a silent one read the same
    for part in ("secret-token", "127.0.0.1", "/hooks"):
        assert part not in outcome
    assert set(Alert.objects.values_list("webhook_outcome", flat=True)) == {outcome}


@pytest.mark.django_db
def test_it_never_raises_on_a_broken_webhook_url(sweep):
    outcome = post_alerts(_slow_night(sweep, "http://exa mple.org:99999/x?token=abc"))
    assert outcome.startswith("refused: ")
    assert "token=abc" not in outcome


# --- Acceptance: a regression injected into the simulator ---------------------------------------

PROFILE = {"ttft_ms": 200}
PARAMS = {"reps": 1, "warmup": 0, "max_tokens": 24}
EXECUTION_TIMEOUT_S = 60


@contextmanager
def finished_signals() -> Iterator[threading.Event]:
    """An event set once execution_finished's receivers (alerts first) have all run."""
    done = threading.Event()

    def receiver(sender: Any, execution: SweepExecution, **kwargs: Any) -> None:
        done.set()

    execution_finished.connect(receiver, dispatch_uid="test-alerts-finished", weak=False)
    try:
        yield done
    finally:
        execution_finished.disconnect(dispatch_uid="test-alerts-finished")


def night(schedule: Schedule, config: EngineConfig, decode_tps: float) -> tuple[SweepExecution, list[Alert]]:
    """A scheduled sweep run against a simulator decoding at `decode_tps`, through start_sweep."""
    with serve_in_thread(SimProfile(decode_tps=decode_tps, **PROFILE)) as sim, finished_signals() as done:
        Engine.objects.filter(pk=config.engine_id).update(base_url=sim.url)
        execution = start_sweep(schedule.sweep, trigger="schedule", schedule=schedule)
        assert done.wait(EXECUTION_TIMEOUT_S), "the sweep run did not finish"
    execution.refresh_from_db()
    statuses = list(execution.runs.values_list("status", "error"))
    assert statuses == [(Run.Status.SUCCEEDED, "")] * 3, statuses
    return execution, list(Alert.objects.filter(execution=execution).select_related("config"))


def _figure(execution: SweepExecution, key: str) -> str:
    values = sorted(run.summary[key]["median"] for run in execution.runs.all())
    return "/".join(f"{v:.2f}" for v in values)


@pytest.mark.django_db(transaction=True)
def test_it_alerts_on_a_20_percent_slower_decode_but_not_on_1_percent(sim_config, inprocess):
    config = sim_config(SimProfile(decode_tps=100, **PROFILE), prefix="regress")
    with webhook() as hook:
        sweep = SweepFactory(configs=[config], jobs=[{"job": "speed", "params": PARAMS}], repetitions=3,
                             webhook_url=hook.url)
        schedule = ScheduleFactory(sweep=sweep)
        for _ in range(3):
            base, raised = night(schedule, config, 100)
            assert raised == [], [(a.metric, a.baseline, a.value) for a in raised]
        near, near_alerts = night(schedule, config, 99)
        slow, slow_alerts = night(schedule, config, 80)
    print(f"\nbaseline run medians (client decode, last night): {_figure(base, 'decode_tps_client')} tok/s")
    print(f"99 tok/s night: client decode {_figure(near, 'decode_tps_client')}; alerts: {len(near_alerts)}")
    for alert in slow_alerts:
        figures = f"{alerts.figure_text(alert, 'baseline')} -> {alerts.figure_text(alert, 'value')}"
        print(f"80 tok/s night: {alert.label}: {figures}, {alert.delta_pct:+.2f} %, {alert.webhook_outcome}")
    assert near_alerts == []
    by_metric = {a.metric: a for a in slow_alerts}
    assert set(by_metric) == {"decode_tps_client", "decode_tps_engine"}
    for alert in slow_alerts:
        assert alert.delta_pct == pytest.approx(-20, abs=2)
        assert alert.webhook_outcome == "delivered (HTTP 200)"
    assert len(hook.bodies) == 1
    body = hook.bodies[0]
    assert body["sweep_run"] == slow.pk
    posted = {a["metric"]: a for a in body["alerts"]}
    assert posted["decode_tps_engine"]["config"] == config.name
    engine = posted["decode_tps_engine"]
    assert engine["value"]["median"] / engine["baseline"]["median"] == pytest.approx(0.8, abs=0.02)
    assert engine["baseline"]["n"] == 12
    assert hook.url not in json.dumps(body)
    assert "secret-token" not in json.dumps(body)


@pytest.mark.django_db
def test_it_still_raises_an_alert_on_a_throttled_run_and_says_so(sweep):
    nights(sweep, *BASELINE)
    hot = scheduled(sweep, [80.0, 80.2, 79.9], warnings=[throttled_warning(12.3)])
    raised = check_execution(hot)
    assert sorted(a.metric for a in raised) == ["decode_tps_client", "decode_tps_engine"]
    alert = Alert.objects.select_related("config").get(metric="decode_tps_client")
    assert alert.value["throttled_s"] == 12.3
    note = ("throttled: the box was throttled for 12.3 s during this run; "
            "the regression may be heat, not the config")
    assert alerts.throttle_note(alert) == note
    sent = alerts.webhook_payload(hot, [alert])["alerts"][0]
    assert (sent["throttled_s"], sent["note"]) == (12.3, note)


@pytest.mark.django_db
def test_it_notes_a_throttled_baseline_and_stays_quiet_without_throttling(sweep):
    first, *_ = nights(sweep, *BASELINE)
    first.runs.update(summary=speed_summary(100.0) | {"telemetry": telemetry(throttled_s=4.0)})
    check_execution(scheduled(sweep, [80.0, 80.2, 79.9]))
    alert = Alert.objects.get(metric="decode_tps_client")
    assert "throttled for 4.0 s during a baseline run" in alerts.throttle_note(alert)
    assert "throttled_s" not in alert.value
    alert.baseline.pop("throttled_s")
    assert alerts.throttle_note(alert) == ""


FAILED_QUARTER = {"attempted": 12, "succeeded": 9, "failed": 3, "failed_by_reason": {"http 500": 3},
                  "cut_by_max_tokens": 9, "stopped_early": 0, "failed_share": 0.25, "over_failed_share": True}


@pytest.mark.django_db
def test_it_says_when_a_quarter_of_the_alerted_runs_requests_failed(sweep):
    nights(sweep, *BASELINE)
    flaky = scheduled(sweep, [80.0, 80.2, 79.9])
    flaky.runs.update(summary=speed_summary(80.0) | {"outcomes": FAILED_QUARTER})
    check_execution(flaky)
    alert = Alert.objects.select_related("config").get(metric="decode_tps_client")
    assert alert.value["failed_share"] == 0.25
    note = "failed requests: 25 % of this run's requests failed; its figures are over the survivors"
    assert alerts.failed_note(alert) == note
    sent = alerts.webhook_payload(flaky, [alert])["alerts"][0]
    assert (sent["failed_share"], sent["baseline_failed_share"], sent["failed_note"]) == (0.25, None, note)
    assert alerts.throttle_note(alert) == ""


@pytest.mark.django_db
def test_it_says_nothing_of_failures_at_ten_percent_or_less(sweep):
    nights(sweep, *BASELINE)
    slow = scheduled(sweep, [80.0, 80.2, 79.9])
    tenth = FAILED_QUARTER | {"attempted": 10, "succeeded": 9, "failed": 1, "failed_share": 0.1,
                              "over_failed_share": False}
    slow.runs.update(summary=speed_summary(80.0) | {"outcomes": tenth})
    check_execution(slow)
    alert = Alert.objects.get(metric="decode_tps_client")
    assert "failed_share" not in alert.value and alerts.failed_note(alert) == ""


@pytest.mark.django_db
def test_it_never_calls_a_run_a_regression_of_runs_with_other_settings(sweep):
    nights(sweep, *BASELINE)
    config = sweep.configs.get()
    config.lookahead = 8  # edited after the baseline's nights: a new revision, with no baseline yet
    config.save()
    assert check_execution(scheduled(sweep, [80.0, 80.2, 79.9])) == []
    nights_after = [scheduled(sweep, d, ago_h=-i - 1) for i, d in enumerate(BASELINE[:2])]
    assert {run.revision.number for run in Run.objects.filter(execution__in=nights_after)} == {2}
    assert [a.metric for a in check_execution(scheduled(sweep, [60.0, 60.1, 59.9], ago_h=-5))] == \
        ["decode_tps_client", "decode_tps_engine"]
