"""Services restarting under a live run: Redis (broker and channel layer) and Postgres.

Each test runs the whole dashboard (`manage.py serve`: daphne, a Celery worker, beat) on a
private Redis and a private Postgres cluster, starts a ~300-request speed run on the simulator,
restarts one service halfway, and checks the run's final record: succeeded, every sample stored
exactly once (seq 0..n-1). For Redis, a headless Chromium watching the run page must end with
as many points as the database has samples.
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tests.faults.services import PrivatePostgres, missing_tools
from tests.faults.stack import TEMPLATE, Stack, serve, stack

pytestmark = pytest.mark.skipif(bool(missing_tools()), reason=missing_tools() or "-")

# 50 x 6 prompts = 300 requests of 8 tokens; ~60 ms each on the simulator, so the run lasts
# ~20-30 s on a busy box, long enough to restart a service in the middle of it.
REPS, MAX_TOKENS = 50, 8
SIM_ARGS = ["--ttft-ms", "20", "--decode-tps", "200", "--lookahead", "0"]
PAGE_TIMEOUT_S = 120.0

# One look at the run page: badge status, points on the tok/s chart, what delivered the
# latest update ("socket" or "polling"), and the socket state line ("live", "reconnecting…").
OBSERVE_JS = """
const badge = document.getElementById("run-status");
return [badge.dataset.status, Number(document.getElementById("speed-chart").dataset.points),
        badge.dataset.transport || "", document.getElementById("live-state").textContent];
"""


def start_dashboard(it: Stack) -> dict[str, Any]:
    """Seed a config on the simulator, then start the dashboard (its worker serves that machine)."""
    seeded = it.seed("setup", it.sim_url)
    serve(it)
    return seeded


def start_run(it: Stack, seeded: dict[str, Any]) -> tuple[int, int]:
    """Start the speed run: (run id, requests it sends)."""
    started = it.seed("start", seeded["config"], REPS, MAX_TOKENS)
    return started["run"], started["total"]


class RunPage:
    """The run page in headless Chromium, observed until the run ends."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.t0 = time.monotonic()
        self.seen: list[tuple[float, str, int, str, str]] = []

    def observe(self) -> tuple[float, str, int, str, str]:
        """(seconds since the page opened, status, points, transport, socket state), kept in `seen`."""
        status, points, transport, state = self.driver.execute_script(OBSERVE_JS)
        self.seen.append((round(time.monotonic() - self.t0, 2), status, points, transport, state))
        return self.seen[-1]

    def wait_until(self, done: Any, timeout_s: float = PAGE_TIMEOUT_S) -> tuple[float, str, int, str, str]:
        """Observe every 50 ms until `done(observation)`; returns that observation."""
        deadline = time.monotonic() + timeout_s
        while not done(now := self.observe()):
            if time.monotonic() > deadline:
                raise AssertionError(f"page never got there: {self.changes()[-10:]}")
            time.sleep(0.05)
        return now

    def changes(self) -> list[tuple[float, str, int, str, str]]:
        """The observations that differ from the one before (what to print)."""
        return [s for i, s in enumerate(self.seen) if i == 0 or s[1:] != self.seen[i - 1][1:]]


@contextmanager
def browser(it: Stack, session: str) -> Iterator[Any]:
    """A headless Chromium signed in to the stack's dashboard (started before the run: it is slow)."""
    from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, chromium

    if not HAVE_CHROMIUM:
        pytest.skip(NEEDS_CHROMIUM)
    with tempfile.TemporaryDirectory(prefix="sparkdash-chromium-", ignore_cleanup_errors=True) as profile:
        driver = chromium(profile)
        try:
            driver.get(it.site_url + "/login/")
            driver.add_cookie({"name": "sessionid", "value": session})
            yield driver
        finally:
            driver.save_screenshot(str(Path(tempfile.gettempdir()) / "redis_fault_run_page.png"))
            severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            print("browser console errors:", *severe, sep="\n  ")
            driver.quit()


def test_it_keeps_a_live_run_whole_across_a_redis_restart(cluster: PrivatePostgres, tmp_path: Path) -> None:
    with stack(cluster, TEMPLATE, "redis_fault", tmp_path, SIM_ARGS) as it:
        seeded = start_dashboard(it)
        with browser(it, seeded["cookie"]) as driver:
            run_id, total = start_run(it, seeded)
            driver.get(it.site_url + reverse("runs:detail", args=[run_id]))
            page = RunPage(driver)
            page.wait_until(lambda s: s[1] == "running" and s[2] > 0 and s[4] == "live")
            before = it.wait_for_samples(run_id, total // 3)
            down_s = it.redis.restart()
            restarted_at, after = time.monotonic() - page.t0, it.requests(run_id)
            page.wait_until(lambda s: s[1] in ("succeeded", "failed", "cancelled"))
            row = it.wait_until_finished(run_id)
            final, requests = it.seqs(run_id), it.requests(run_id)
            end = page.wait_until(lambda s: s[2] >= total, timeout_s=15)
    print(f"\nrun {run_id}: {before} requests stored before the Redis restart ({down_s:.2f} s down), "
          f"{after} just after it, {len(final)} at the end; the page drew {end[2]} points",
          "(t, status, points, transport, socket state) at each change:", *page.changes(), sep="\n  ")

    assert row["status"] == "succeeded", row
    # Each sample (requests and telemetry readings) stored once, none missing, every request there.
    assert final == list(range(len(final))), f"{len(final)} samples, {len(set(final))} distinct"
    assert requests == total, f"{requests} requests of {total}"
    assert before < total and after < total, "the restart came after the run had ended"
    assert end[2] == total
    # The page lost its socket, reconnected, and live updates came back over it (not just the
    # final HTTP read); what it missed meanwhile came from the database (the final count).
    assert any(s[4] == "reconnecting\u2026" for s in page.seen), page.changes()
    resumed = [s for s in page.seen if s[0] > restarted_at and s[1] == "running" and s[3] == "socket"]
    assert resumed and resumed[-1][2] > resumed[0][2], page.changes()


def test_it_loses_no_sample_when_postgres_restarts_during_a_run(
    cluster: PrivatePostgres, tmp_path: Path
) -> None:
    with stack(cluster, TEMPLATE, "postgres_fault", tmp_path, SIM_ARGS) as it:
        run_id, total = start_run(it, start_dashboard(it))
        before = it.wait_for_samples(run_id, total // 3)
        down_s = cluster.restart()
        after = it.requests(run_id)
        row = it.wait_until_finished(run_id)
        final, requests = it.seqs(run_id), it.requests(run_id)
        log = it.log()
    print(f"\nrun {run_id}: {before} requests stored before the Postgres restart ({down_s:.2f} s down), "
          f"{after} just after it, {len(final)} at the end")

    assert row["status"] == "succeeded", row
    # Each sample (requests and telemetry readings) stored once, none missing, every request there.
    assert final == list(range(len(final))), f"{len(final)} samples, {len(set(final))} distinct"
    assert requests == total, f"{requests} requests of {total}"
    assert row["done"] == total
    assert before < total and after < total, "the restart came after the run had ended"
    # The worker met the outage (else this test proved nothing): its sample writes retried, or, when
    # Postgres was back within a blink (0.2 s here), at least the run's heartbeat hit it.
    retried = f"run {run_id}: database unavailable" in log
    assert retried or f"heartbeat of run {run_id} failed" in log, "the worker never met the outage"
    assert not retried or f"run {run_id}: database back after" in log
