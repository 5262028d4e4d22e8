"""Each job's finished run page in Japanese, with its results: a run of every job kind in the
registry is measured to the end (the simulator, or a scripted engine for the quality jobs), then
its page is opened in headless Chromium asking for `ja` and must show no catalogue string in
English (tests/untranslated.py): its tables, notes, banners, legends and axes included.

tests/test_japanese_browser.py walks the pages of runs with no results; this one reads the
results. Screenshots go to /tmp/ja_result_<job>.png, for a person to look at.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from engines.simulator import serve_in_thread
from runs.actions.imports import import_file
from runs.core.registry import JOBS
from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import EngineConfigFactory
from tests.runs.views.test_job_charts_browser import PROFILE, RECORDED, _bench, _external
from tests.runs.worker.test_lossless_job import LOSSY, simulator_config
from tests.runs.worker.test_quality_jobs import letter_b
from tests.scripted_openai import scripted_chat
from tests.untranslated import page_english, page_untranslated

SHOTS = Path(tempfile.gettempdir())
# Once the page's charts have drawn what the summary holds (a page with no chart is ready at once).
DRAWN_JS = """
if (document.readyState !== "complete") return false;
const canvases = [...document.querySelectorAll("#run canvas[data-points]")];
return canvases.length === 0 || Number(canvases[0].dataset.points) > 0;
"""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    # What a page says does not depend on the database: once is enough, as for the newcomer walk.
    pytest.mark.skipif(bool(os.getenv("DATABASE_URL")), reason="runs in the embedded pass"),
    pytest.mark.django_db(transaction=True),
]


@contextmanager
def _scripted(answer: Callable[[Any], str]) -> Iterator[Any]:
    with scripted_chat(answer) as chat:
        yield EngineConfigFactory(model="scripted", engine__base_url=chat.url)


def _no_solution(body: Any) -> str:
    return "```python\ndef nothing():\n    return None\n```"


def _finished_runs(sim: Any, tmp_path: Path) -> dict[str, Run]:
    """A finished run of each job kind, with results (small versions of each job)."""
    replay = tmp_path / "session.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in RECORDED))
    plain = _external(sim, bytes_per_token_gb=0.3)
    runs = {
        "speed": _bench(plain, "speed", "--reps", "1", "--warmup", "0"),
        "bandwidth": _bench(plain, "bandwidth", "--buffer-mib", "32", "--passes", "3"),
        "replay": _bench(plain, "replay", "--requests", str(replay), "--reps", "2", "--warmup", "0"),
        "concurrency": _bench(plain, "concurrency", "--levels", "1,2", "--answer-tokens", "24",
                              "--warmup", "0"),
        "prefix-cache": _bench(plain, "prefix-cache", "--steps", "5", "--bytes-per-step", "1200"),
        "needle": _bench(plain, "needle", "--lengths", "2000", "--depths", "0.25,0.75"),
        "agent-table": _bench(plain, "agent-table", "--fixture", "routes_12"),
        "lookahead": _bench(simulator_config("sim-sweep", "--decode-tps 300 --ttft-ms 5 --acceptance 0.8"),
                            "lookahead", "--lengths", "0,4", "--reps", "1", "--warmup", "0"),
        # Answers that differ (a lossy drafter), so the divergence columns are filled.
        "lossless": _bench(simulator_config("sim-lossy", LOSSY), "lossless"),
    }
    with _scripted(letter_b) as config:
        runs["mmlu-pro"] = _bench(config, "mmlu-pro", "--dataset", "sample", "--num-fewshot", "0")
    with _scripted(_no_solution) as config:
        runs["evalplus"] = _bench(config, "evalplus", "--suite", "mbpp", "--dataset", "sample",
                                  "--limit", "2")
    guidellm = Path(__file__).parents[2] / "fixtures" / "peers" / "guidellm" / "c4" / "benchmarks.json"
    (runs["imported"],) = import_file("benchmarks.json", guidellm.read_bytes(), plain).added
    return runs


@pytest.fixture
def sim():
    with serve_in_thread(PROFILE) as server:
        yield server


def test_it_shows_every_jobs_results_in_japanese(inprocess, sim, live_server, alice, tmp_path):
    runs = _finished_runs(sim, tmp_path)
    assert sorted(runs) == sorted(JOBS), "a new job kind: add a run of it here"
    found: dict[str, list[str]] = {}
    prose: dict[str, list[str]] = {}
    said: list[str] = []
    with logged_in_chromium(live_server.url, alice, height=2400, language="ja") as driver:
        for job, run in runs.items():
            driver.get(driver.base_url + run.get_absolute_url())
            WebDriverWait(driver, 10).until(lambda d: d.execute_script(DRAWN_JS))
            driver.save_screenshot(str(SHOTS / f"ja_result_{job}.png"))
            assert driver.execute_script("return document.documentElement.lang") == "ja", job
            found[job], prose[job] = page_untranslated(driver), page_english(driver)
            if job == "agent-table":
                said = [driver.find_element(By.CSS_SELECTOR, css).text
                        for css in ('[data-warning="read-loop"]', "#job-summary")]
    print("\nEnglish prose left:", *(f"{job}: {left}" for job, left in prose.items() if left), sep="\n")
    # Stored identifiers said in Japanese: the agent's outcome in its table and its read-loop warning.
    assert runs["agent-table"].summary["outcome"] == "rescued"
    assert len(said) == 2 and all("\u6551\u6e08" in text and "rescued" not in text for text in said), said
    left = {job: texts for job, texts in found.items() if texts}
    assert left == {}, "\n".join(f"{job}: {texts}" for job, texts in left.items())
