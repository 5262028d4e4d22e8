from __future__ import annotations

import pytest

from runs.core.scoring.parity import NOT_RECORDED, check_parity, show_value

pytestmark = pytest.mark.backend_free

SETTINGS = {
    "temperature": 0.0, "top_p": None, "top_k": None, "seed": 0, "max_tokens": 256,
    "context_length": 32768, "prompt_set": "fd1f2502ce8e", "parallel": 4,
}


def test_it_finds_no_mismatch_when_every_setting_matches():
    runs = [("base", "speed", SETTINGS), ("base", "speed", dict(SETTINGS)), ("fast", "speed", dict(SETTINGS))]
    assert check_parity(runs) == []


def test_it_names_the_field_and_each_configs_values():
    runs = [("base", "speed", SETTINGS), ("hot", "speed", SETTINGS | {"temperature": 0.7})]
    values = {"base": ["0"], "hot": ["0.7"]}
    expected = {"jobs": ["speed"], "field": "temperature", "label": "temperature", "values": values}
    assert check_parity(runs) == [expected]


def test_it_lists_every_mismatching_field_in_order():
    other = SETTINGS | {"parallel": 1, "max_tokens": 512, "context_length": None, "prompt_set": "0123ab"}
    mismatches = check_parity([("a", "speed", SETTINGS), ("b", "speed", other)])
    labels = [m["label"] for m in mismatches]
    assert labels == ["max tokens", "context length", "prompt set", "parallel slots"]
    assert mismatches[1]["values"] == {"a": ["32768"], "b": ["default"]}


def test_it_flags_runs_of_one_config_that_differ():
    runs = [("base", "speed", SETTINGS), ("base", "speed", SETTINGS | {"seed": 7})]
    assert check_parity(runs)[0]["values"] == {"base": ["0", "7"]}


def test_it_lists_jobs_that_differ_the_same_way_once():
    hot = SETTINGS | {"temperature": 0.7}
    runs = [("a", "speed", SETTINGS), ("b", "speed", hot), ("a", "needle", SETTINGS), ("b", "needle", hot),
            ("a", "mmlu-pro", SETTINGS), ("b", "mmlu-pro", hot | {"seed": 1})]
    mismatches = check_parity(runs)
    assert [(m["field"], m["jobs"]) for m in mismatches] == [
        ("temperature", ["mmlu-pro", "needle", "speed"]), ("seed", ["mmlu-pro"])]


def test_it_checks_each_job_on_its_own():
    runs = [("a", "speed", SETTINGS), ("a", "mmlu-pro", SETTINGS | {"max_tokens": 2048}),
            ("b", "speed", SETTINGS), ("b", "mmlu-pro", SETTINGS | {"max_tokens": 2048})]
    assert check_parity(runs) == []


def test_it_leaves_out_settings_a_run_did_not_record():
    runs = [("a", "speed", SETTINGS), ("b", "speed", SETTINGS | {"prompt_set": NOT_RECORDED})]
    assert check_parity(runs) == []
    assert check_parity([("a", "speed", {}), ("b", "speed", {"seed": 1})]) == []


def test_it_shows_values_as_typed():
    assert [show_value(v) for v in (None, 0.0, 0.7, 4, "abc")] == ["default", "0", "0.7", "4", "abc"]


def test_it_flags_configs_that_differ_in_thinking_as_not_like_for_like():
    same = {"temperature": 0.0, "max_tokens": 2048}
    mismatches = check_parity([("off", "mmlu-pro", same | {"thinking": "off"}),
                               ("on", "mmlu-pro", same | {"thinking": "on"})])
    assert [(m["field"], m["values"]) for m in mismatches] == [("thinking", {"off": ["off"], "on": ["on"]})]
