"""The cross-tool view: each tool's latest figure per level, and how far apart the tools are."""
from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.actions.imports import import_file
from runs.models import Run
from runs.results.cross_tool import cross_tool
from tests.factories import EngineConfigFactory, RunFactory, UserFactory
from tests.runs.actions.test_imports import encoded, vllm_result

pytestmark = pytest.mark.django_db


def ours(config, ttft: float) -> Run:
    return RunFactory(config=config, status=Run.Status.SUCCEEDED, finished=timezone.now(),
                      summary={"ttft_s": {"median": ttft, "min": ttft, "max": ttft, "n": 3},
                               "decode_tps_client": {"median": 101.0, "min": 99.0, "max": 103.0, "n": 3}})


def test_it_sets_each_tools_figure_side_by_side_at_each_level_with_the_spread():
    config = EngineConfigFactory()
    ours(config, 0.025)
    import_file("one.json", encoded(vllm_result(concurrency=1, ttfts=(0.02, 0.02, 0.02))), config)
    import_file("four.json", encoded(vllm_result(concurrency=4)), config)
    one, four = cross_tool(Run.objects.filter(config=config).order_by("-created", "-pk"))
    assert (one.concurrency, one.tools, four.concurrency, four.tools) == (
        1, ["SparkDash", "vLLM bench serve"], 4, ["vLLM bench serve"])
    ttft = next(row for row in one.rows if row["metric"].key == "ttft_s")
    assert ttft["cells"]["SparkDash"].value == 0.025 and ttft["cells"]["vLLM bench serve"].value == 0.02
    assert ttft["spread"] == pytest.approx(0.25)
    assert "vLLM's clock" in ttft["cells"]["vLLM bench serve"].note
    tpot = next(row for row in one.rows if row["metric"].key == "tpot_s")
    assert tpot["cells"]["SparkDash"] is None and tpot["spread"] is None  # not measured: absent, not 0


def test_it_shows_the_page_with_a_link_to_compare_the_runs_of_a_level(client):
    config = EngineConfigFactory()
    mine = ours(config, 0.025)
    (theirs,) = import_file("one.json", encoded(vllm_result(concurrency=1)), config).added
    client.force_login(UserFactory(is_superuser=True))
    page = client.get(reverse("runs:config-tools", args=[config.pk])).content.decode()
    assert "vLLM bench serve" in page and f"?runs={mine.pk},{theirs.pk}" in page
