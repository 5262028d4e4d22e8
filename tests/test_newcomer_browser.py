"""The newcomer's path end to end in headless Chromium, on a fresh install of the demo (tests/newcomer.py).

What a first visit must show: the empty home page says what to do, the tour's speed run shows
acceptance per output type (structured far above Japanese prose), its lookahead sweep draws two
distinct curves (structured output peaking above lookahead 0, prose flat), compare selected from
the runs list works, and no demo config shows a recipe error. Everything runs on the simulator.
"""
from __future__ import annotations

import os
import re
import tempfile

import pytest

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, chromium
from tests.newcomer import DemoSite, Walk, walk

# The walk is always the embedded default (make run's, on a fresh machine), so a Postgres pass of
# the suite would only repeat it: it runs where DATABASE_URL is unset (.ci/run's second pass).
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.skipif(bool(os.getenv("DATABASE_URL")), reason="the walk runs in the embedded pass"),
]


@pytest.fixture(scope="module")
def seen() -> Walk:
    with DemoSite() as site, tempfile.TemporaryDirectory(prefix="sparkdash-newcomer-chromium-") as profile:
        driver = chromium(profile, height=1500)
        try:
            return walk(driver, site, shots=None)
        finally:
            driver.quit()


def first_number(text: str) -> float:
    found = re.search(r"-?\d+(?:\.\d+)?", text)
    assert found, f"no figure in {text!r}"
    return float(found.group())


def series(seen: Walk, label: str) -> list[float | None]:
    found = [data for name, data in seen.lookahead["datasets"] if name == label]
    assert found, f"no {label!r} in {[name for name, _ in seen.lookahead['datasets']]}"
    return [None if v is None else float(v) for v in found[0]]


def test_it_tells_a_newcomer_what_to_do_first(seen):
    assert "No runs yet" in seen.empty_home and "Start the demo tour" in seen.empty_home


def test_it_shows_acceptance_per_output_type_on_the_tours_speed_run(seen):
    assert "simulator" in seen.speed_run.lower()
    acceptance = {t: first_number(cells[1]) for t, cells in seen.by_type.items()}
    assert set(acceptance) == {"tool-call", "table", "prose-en", "prose-ja"}
    # Lookahead 8 (the config's): drafts hit on structured output, seldom on prose, almost never in Japanese.
    assert min(acceptance["tool-call"], acceptance["table"]) > 2 * acceptance["prose-en"]
    assert acceptance["prose-en"] > 2 * acceptance["prose-ja"] and acceptance["prose-ja"] < 10


def test_it_draws_distinct_structured_and_prose_curves_on_the_lookahead_sweep(seen):
    assert seen.lookahead["labels"] == ["0", "2", "4", "8", "12"]
    tool = [float(v or 0) for v in series(seen, "tool-call decode, tok/s")]
    prose = [float(v or 0) for v in series(seen, "prose-ja decode, tok/s")]
    assert tool[0] == min(tool) and max(tool) > 1.5 * tool[0]  # lookahead 0 is the slowest point
    assert max(tool[1:-1]) > tool[-1]  # the peak is at a middle length
    assert max(prose) < 1.15 * min(prose)  # Japanese prose barely moves
    accepted = series(seen, "tool-call acceptance, %")
    assert accepted[0] is None  # lookahead 0 drafts nothing
    drafted = [float(v or 0) for v in accepted[1:]]
    assert drafted == sorted(drafted, reverse=True) and drafted[0] > drafted[-1]  # falls as it grows


def test_it_compares_the_runs_selected_in_the_runs_list(seen):
    assert "sim-moe-mtp8" in seen.compare and "sim-27b-q8-la12" in seen.compare
    assert "Not like for like" not in seen.compare  # the tour gives both the same answer length
    # One acceptance row, pooled: Ollama's (from its log) beside llama-server's (its counters).
    assert not any("acceptance (engine log)" in line for line in seen.compare.splitlines())
    pooled = next(line for line in seen.compare.splitlines() if line.startswith("acceptance rate"))
    assert pooled.count("%") >= 2


def test_it_shows_no_recipe_error_on_any_demo_config(seen):
    assert seen.recipe_errors == []


def test_it_shows_the_roofline_and_an_efficiency_below_the_ceiling_with_drafts(seen):
    line = next(line for line in seen.speed_run.splitlines() if line.startswith("roofline"))
    assert "273 GB/s" in line and "5.80 GB per token" in line and "tokens per verification" in line
    efficiency = float(re.search(r"= (\d+) % efficiency", line).group(1))
    assert 50 < efficiency < 100


def test_it_shows_the_tours_cache_discard_and_read_loop_warnings(seen):
    assert "cache-discard" in seen.warnings["prefix-cache"]
    assert "read-loop" in seen.warnings["agent-table"]
