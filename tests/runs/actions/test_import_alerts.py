"""Regression alerts for imported runs: like with like (config revision, tool, load), by the sweep rule."""
from __future__ import annotations

import pytest
from django.urls import reverse

from runs.actions.imports import import_file
from runs.models import Alert
from tests.factories import EngineConfigFactory
from tests.runs.actions.test_imports import encoded, vllm_result

pytestmark = pytest.mark.django_db


def imported(config, n: int, **result):
    """The n-th file of a series (its TTFTs differ a little, so each file is new)."""
    data = vllm_result(ttfts=(0.020 + n / 1000, 0.021, 0.022), **result)
    return import_file(f"vllm-{n}.json", encoded(data), config).added


def test_it_raises_an_alert_when_a_tools_new_file_decodes_slower_than_its_earlier_ones():
    config = EngineConfigFactory()
    imported(config, 1), imported(config, 2)
    (run,) = imported(config, 3, gen_s=0.62)  # twice the time per token: half the decode speed
    alerts = {a.metric: a for a in Alert.objects.filter(run=run)}
    assert set(alerts) == {"decode_tps_client", "tpot_s"}
    decode = alerts["decode_tps_client"]
    assert (decode.execution, decode.benchmark) == (None, "vLLM bench serve, concurrency 1")
    assert decode.delta_pct == pytest.approx(-50, abs=0.5)


def test_it_compares_only_like_with_like_and_wants_two_runs_before():
    config = EngineConfigFactory()
    imported(config, 1), imported(config, 2, concurrency=4)
    imported(config, 3, gen_s=0.62)  # one like run before it: no baseline yet
    imported(config, 4, concurrency=4, gen_s=0.62)  # one at its load before it
    assert not Alert.objects.exists()
    imported(config, 5, gen_s=0.31)  # as fast as run 1, against runs 1 and 3: not worse than both
    assert not Alert.objects.exists()


def test_it_lists_an_imported_runs_alert_with_a_link_to_the_run(admin_client):
    config = EngineConfigFactory()
    imported(config, 1), imported(config, 2)
    (run,) = imported(config, 3, gen_s=0.62)
    page = admin_client.get(reverse("runs:alert-list")).content.decode()
    assert f'href="{run.get_absolute_url()}"' in page and f"imported run #{run.pk}" in page
    assert "decode (client)" in page and "tok/s" in page
