"""The flat results table: its rows, the page, its downloads and `manage.py runs` agree."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.models import Run
from runs.results.flat import cell_text, columns, flat_rows
from tests.factories import EngineConfigFactory
from tests.runs.compare_helpers import concurrency_summary, pooled, speed_summary, succeeded

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs():
    config = EngineConfigFactory(name="mtp8", model="qwen3:8b", quantization="Q4_K_M",
                                 speculative_method="draft-mtp", lookahead=8)
    speed = succeeded(config, "speed", speed_summary(41.0, acceptance=0.77) | {
        "tokens_per_verification": pooled(3.96) | {"pooled": 3.96},
        "telemetry": {"energy": {"j_per_token": 0.42}}}, minute=1,
        provenance={"config": config.snapshot(), "quantization": "Q4_K_M"})
    levels = succeeded(config, "concurrency", concurrency_summary({1: 40.0, 4: 120.0}), minute=2)
    quality = succeeded(config, "mmlu-pro", {"accuracy": 0.41, "total": 100}, minute=3)
    return config, speed, levels, quality


def test_it_gives_one_row_per_run_and_load_level_with_what_each_ran(runs):
    config, speed, levels, quality = runs
    rows = flat_rows(Run.objects.order_by("created"))
    assert [(r["run"], r["level"]) for r in rows] == [
        (speed.pk, None), (levels.pk, 1), (levels.pk, 4), (quality.pk, None)]
    first = rows[0]
    assert first | {"finished": None} == first | {
        "finished": None, "machine": config.engine.machine.name, "engine": config.engine.name,
        "config": "mtp8", "model": "qwen3:8b", "quantization": "Q4_K_M", "draft_method": "draft-mtp",
        "lookahead": 8, "decode_tps_client": 41.0,
        "acceptance_rate": 0.77, "tokens_per_verification": 3.96, "j_per_token": 0.42}
    assert [r["total_tps"] for r in rows[1:3]] == [40.0, 120.0]
    assert (rows[3]["headline"], rows[3]["headline_value"]) == ("accuracy", pytest.approx(41.0))
    # 41 of 100 questions: the Wilson score interval (as statsmodels' proportion_confint gives it).
    assert (rows[3]["headline_low"], rows[3]["headline_high"]) == (pytest.approx(31.87, abs=0.01),
                                                                   pytest.approx(50.80, abs=0.01))
    assert (rows[3]["headline_count"], rows[3]["headline_out_of"]) == (41, 100)


def test_it_keeps_the_settings_a_run_ran_with_after_the_config_changes(runs):
    config, speed, *_ = runs
    config.lookahead, config.speculative_method = 4, "ngram"
    config.save()
    row = flat_rows(Run.objects.filter(pk=speed.pk))[0]
    assert (row["lookahead"], row["draft_method"]) == (8, "draft-mtp")


def test_it_serves_the_same_rows_on_the_page_and_as_csv_markdown_and_json(alice_client, runs):
    url = reverse("runs:results")
    page = alice_client.get(url)
    # The page writes times to the minute and the simulator flag as its label; the rest as downloaded.
    shown_columns = columns()
    same = [i for i, c in enumerate(shown_columns) if c not in ("finished", "simulator")]
    shown = [[row[i] for i in same] for row in page.context["rows"]]
    assert len(shown) == 4
    as_csv = list(csv.reader(io.StringIO(alice_client.get(url, {"format": "csv"}).content.decode())))
    assert as_csv[0] == shown_columns
    as_json = json.loads(alice_client.get(url, {"format": "json"}).content)["rows"]
    assert [[cell_text(row[shown_columns[i]]) for i in same] for row in as_json] == shown
    assert [[cell_text(_number(row[i])) for i in same] for row in as_csv[1:]] == shown
    markdown = alice_client.get(url, {"format": "md"}).content.decode().splitlines()
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in markdown[2:]]
    assert [[row[i] for i in same] for row in cells] == shown
    only_speed = alice_client.get(url, {"job": "speed"}).context["rows"]
    assert len(only_speed) == 1


def test_it_prints_the_table_from_the_command_line(alice_client, runs):
    out = io.StringIO()
    call_command("runs", format="md", stdout=out)
    page = alice_client.get(reverse("runs:results"), {"format": "md"}).content.decode()
    assert out.getvalue() == page
    out = io.StringIO()
    call_command("runs", format="json", job="concurrency", stdout=out)
    assert [r["level"] for r in json.loads(out.getvalue())["rows"]] == [1, 4]


def _number(text: str):
    """A CSV cell back as the value it was written from (numbers are written in full)."""
    if text in ("", "True", "False"):
        return {"": None, "True": True, "False": False}[text]
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def test_it_names_an_imported_runs_tool_and_load_level_in_its_row():
    from runs.actions.imports import import_file
    from tests.runs.actions.test_imports import encoded, vllm_result

    (run,) = import_file("v.json", encoded(vllm_result(concurrency=4)), EngineConfigFactory()).added
    (row,) = flat_rows([Run.objects.select_related("config__engine__machine", "revision").get(pk=run.pk)])
    assert (row["job"], row["level"]) == ("imported: vllm-bench", 4)
    assert row["ttft_s"] == pytest.approx(0.021)


def test_it_heads_the_page_and_the_markdown_with_words_not_keys(alice_client, runs):
    url = reverse("runs:results")
    headings = [column["text"] for column in alice_client.get(url).context["columns"]]
    markdown = alice_client.get(url, {"format": "md"}).content.decode().splitlines()[0]
    assert [cell.strip() for cell in markdown.strip("|").split("|")] == headings
    assert not [text for text in headings if "_" in text]
    assert {"engine kind", "speculative method", "load level"} <= set(headings)
    # The downloads for scripts keep the machine keys.
    as_csv = next(csv.reader(io.StringIO(alice_client.get(url, {"format": "csv"}).content.decode())))
    assert as_csv == columns() and "engine_kind" in as_csv


def test_it_heads_the_page_in_the_readers_language(alice_client, runs):
    page = alice_client.get(reverse("runs:results"), HTTP_ACCEPT_LANGUAGE="ja")
    headings = [column["text"] for column in page.context["columns"]]
    assert not [text for text in headings if "_" in text]
    assert "投機的デコーディングの方式" in headings


def test_it_lists_the_codes_of_each_runs_warnings(runs):
    _, speed, _, _ = runs
    speed.warnings = [{"kind": "client-bound", "message": "..."}, {"kind": "throttled", "message": "..."}]
    speed.save()
    rows = {row["run"]: row for row in flat_rows(Run.objects.all())}
    assert rows[speed.pk]["warnings"] == "client-bound, throttled"
    assert [row["warnings"] for pk, row in rows.items() if pk != speed.pk] == [None, None]
    assert columns()[-1] == "warnings"
