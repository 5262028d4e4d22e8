"""Importing other tools' result files: whole or not at all, and a second import adds nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from engines.models import EngineConfig
from runs.actions import imports
from runs.actions.imports import NotStored, import_file
from runs.actions.runs import start_run
from runs.core.imports import Unreadable
from runs.core.imports.match import Mismatched
from runs.models import Run
from tests.factories import EngineConfigFactory, UserFactory

pytestmark = pytest.mark.django_db

PEERS = Path(__file__).parents[2] / "fixtures" / "peers"


def real(path: str) -> dict:
    """A file a peer tool wrote (tests/fixtures/peers), to be edited the way a user found a defect."""
    return json.loads((PEERS / path).read_text(encoding="utf-8"))


def vllm_with_ttfts(value: float, **fields) -> bytes:
    """vLLM's own c1 file with every TTFT set to `value` ms, and `fields` replaced."""
    data = real("vllm/vllm-bench-c1.json")
    data["ttfts"] = [value / 1000] * len(data["ttfts"])
    data |= {key: value for key in data if key.endswith("_ttft_ms")} | fields
    return json.dumps(data).encode()


def guidellm_of(model: str) -> bytes:
    """GuideLLM's own c1 report, its backend's model set to `model`."""
    data = real("guidellm/c1/benchmarks.json")
    data["config"]["spec"]["backend"]["model"] = model
    return json.dumps(data).encode()


@pytest.fixture
def demo():
    """The demo's configs (sim-moe-mtp8 on sim-llama, the simulator), as `manage.py demo` loads them."""
    call_command("demo")
    return EngineConfig.objects.get(name="sim-moe-mtp8")


def vllm_result(
    concurrency: int = 1, ttfts=(0.021, 0.019, 0.030), failed: int = 0, gen_s: float = 0.31,
    model: str = EngineConfigFactory.model,
) -> dict:
    """A `vllm bench serve --save-result --save-detailed` file's fields, for the refusal paths
    (the real files the tools wrote are held in tests/runs/core/imports/test_peer_files.py); its
    model is the factory config's."""
    n = len(ttfts)
    return {
        "date": "20261205-093000", "backend": "openai-chat", "model_id": model,
        "max_concurrency": concurrency, "completed": n, "failed": failed,
        "median_ttft_ms": sorted(ttfts)[n // 2] * 1000, "median_tpot_ms": 10.0,
        "median_itl_ms": 10.0, "median_e2el_ms": 330.0, "output_throughput": 95.5,
        "ttfts": [*ttfts, *[0.0] * failed], "latencies": [t + gen_s for t in ttfts] + [0.0] * failed,
        "output_lens": [32] * n + [0] * failed, "itls": [[0.01] * 31] * n + [[]] * failed,
        "errors": [""] * n + ["Server disconnected"] * failed,
    }


def encoded(data: dict) -> bytes:
    return json.dumps(data).encode()


def test_it_stores_each_level_as_a_succeeded_imported_run_with_its_provenance():
    config = EngineConfigFactory()
    done = import_file("vllm.json", encoded(vllm_result(failed=1)), config)
    (run,) = done.added
    assert (run.job, run.status, run.config, run.machine) == ("imported", "succeeded", config, config.machine)
    assert run.params == {"tool": "vllm-bench", "concurrency": 1}
    assert run.summary["ttft_s"]["median"] == pytest.approx(0.021)
    assert run.summary["failed_by_reason"] == {"Server disconnected": 1} and run.summary["attempted"] == 4
    imported = run.provenance["imported_from"]
    assert (imported["tool"], imported["file"], len(imported["sha256"])) == ("vllm-bench", "vllm.json", 64)
    assert run.revision.config == config


def test_it_adds_nothing_when_the_same_file_is_imported_again():
    config = EngineConfigFactory()
    data = encoded(vllm_result())
    assert len(import_file("a.json", data, config).added) == 1
    again = import_file("renamed.json", data, config)
    assert (again.added, again.already) == ([], 1)
    assert Run.objects.filter(job="imported").count() == 1


@pytest.mark.parametrize("data, expected", [
    (encoded(vllm_result())[:-40], "is not complete JSON"),
    (b'{"tool": "something else", "p50": 3}', "is not a result file SparkDash knows: expected"),
    (b"", "is empty"),
])
def test_it_refuses_a_truncated_or_unknown_file_and_stores_nothing(data, expected):
    config = EngineConfigFactory()
    with pytest.raises(Unreadable, match=expected):
        import_file("bad.json", data, config)
    assert not Run.objects.exists()


def test_it_stores_nothing_of_a_command_whose_second_file_is_unreadable(tmp_path, capsys):
    config = EngineConfigFactory()
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_bytes(encoded(vllm_result()))
    bad.write_text("{")
    with pytest.raises(CommandError, match=r"bad\.json is not complete JSON"):
        call_command("importruns", str(good), str(bad), "--config", config.name)
    assert not Run.objects.exists()


def test_it_prints_one_json_object_per_run_with_the_bench_commands_metric_keys(tmp_path, capsys):
    config = EngineConfigFactory()
    path = tmp_path / "vllm.json"
    path.write_bytes(encoded(vllm_result(concurrency=4)))
    call_command("importruns", str(path), "--config", config.name)
    (line,) = capsys.readouterr().out.splitlines()
    printed = json.loads(line)
    run = Run.objects.get()
    assert (printed["id"], printed["tool"], printed["level"]) == (run.pk, "vllm-bench", "concurrency 4")
    assert printed["summary"]["ttft_s"]["median"] == pytest.approx(0.021)
    assert printed["summary"]["decode_tps_client"]["median"] == pytest.approx(100.0)


def test_it_refuses_to_start_an_imported_run():
    with pytest.raises(ValueError, match="read from a result file, not started"):
        start_run(EngineConfigFactory(), "imported", {"tool": "guidellm"})


def test_it_imports_the_files_guidellm_wrote_once_and_prints_its_own_medians(tmp_path, capsys):
    peers = Path(__file__).parents[2] / "fixtures" / "peers" / "guidellm"
    config = EngineConfigFactory()
    paths = [str(peers / "c1" / "benchmarks.json"), str(peers / "c4" / "benchmarks.json")]
    call_command("importruns", *paths, "--config", config.name)
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    own = [json.loads(Path(p).read_text())["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
           for p in paths]
    assert [(p["tool"], p["version"], p["level"]) for p in printed] == [
        ("guidellm", "0.8.1", "synchronous"), ("guidellm", "0.8.1", "concurrent@4")]
    medians = [p["summary"]["ttft_s"]["median"] * 1000 for p in printed]
    assert medians == pytest.approx([o["median"] for o in own])
    call_command("importruns", *paths, "--config", config.name)
    assert capsys.readouterr().out == ""
    assert Run.objects.filter(job="imported").count() == 2


def test_it_makes_a_config_from_the_files_model_on_the_engine_given_and_reuses_it(tmp_path, capsys):
    engine = EngineConfigFactory().engine
    peers = Path(__file__).parents[2] / "fixtures" / "peers" / "aiperf"
    for level in ("c1", "c4"):
        call_command("importruns", str(peers / level / "profile_export_aiperf.json"), "--engine", engine.name)
    one, four = Run.objects.filter(job="imported").order_by("pk")
    assert one.config == four.config and one.config.engine == engine
    assert one.config.name == "AIPerf: gemma3-270m-q4_k_m.gguf"
    # the model as the file names it
    assert one.config.model == "/root/.cache/sparkdash/engine/models/gemma3-270m-q4_k_m.gguf"
    assert one.provenance["imported_from"]["command"].startswith("aiperf profile --model")


def test_it_refuses_a_vllm_file_with_negative_ttfts_and_stores_nothing(tmp_path):
    config = EngineConfigFactory(model="/models/gemma3-270m-q4_k_m.gguf")
    path = tmp_path / "vllm-c1.json"
    path.write_bytes(vllm_with_ttfts(-5))
    refusal = r"vllm-c1\.json, level concurrency 1, ttft_s \(median\): -0\.005 is below 0, impossible for"
    with pytest.raises(CommandError, match=refusal):
        call_command("importruns", str(path), "--config", config.name)
    assert not Run.objects.exists()


def test_it_never_calls_a_refused_file_imported_before(tmp_path, capsys):
    config = EngineConfigFactory(model="/models/gemma3-270m-q4_k_m.gguf")
    path = tmp_path / "vllm-nan.json"
    path.write_bytes(vllm_with_ttfts(float("nan"), output_throughput=1e308))
    refusal = r"vllm-nan\.json, level concurrency 1, output_throughput: 1e\+308"
    with pytest.raises(CommandError, match=refusal):
        call_command("importruns", str(path), "--config", config.name)
    assert "imported before" not in capsys.readouterr().err
    assert not Run.objects.exists()


def test_it_reports_a_database_refusal_as_what_it_is_and_stores_nothing(monkeypatch):
    """A figure the checks let through (here: the checks switched off) that the database refuses is
    its error, with the level, never "imported before"."""
    monkeypatch.setattr("runs.core.imports.detect.check_file", lambda name, peer: None)
    config = EngineConfigFactory(model="/models/gemma3-270m-q4_k_m.gguf")
    refusal = r"vllm-nan\.json, level concurrency 1: the database refused the run \("
    with pytest.raises(NotStored, match=refusal):
        import_file("vllm-nan.json", vllm_with_ttfts(float("nan")), config)
    assert not Run.objects.exists()


def test_it_takes_a_level_whose_key_exists_as_imported_by_another_request():
    config = EngineConfigFactory()
    data = encoded(vllm_result())
    (run,) = import_file("a.json", data, config).added
    peer = imports.read_results("a.json", data)
    level = peer.levels[0]
    again = imports._store(peer, level, run.import_key, config, run.revision, None, "a.json", "d", [])
    assert again is None and Run.objects.count() == 1


def test_it_refuses_a_guidellm_file_of_another_model_on_the_demo_config_naming_both(tmp_path, demo):
    path = tmp_path / "benchmarks.json"
    path.write_bytes(guidellm_of("gemma-3-270m"))
    with pytest.raises(CommandError) as refused:
        call_command("importruns", str(path), "--config", "sim-moe-mtp8")
    assert ("the file's model is gemma-3-270m; config sim-moe-mtp8 serves "
            "/models/sim-moe-80b-a3b-Q4_K_M.gguf on sim-llama (simulator)") in str(refused.value)
    assert "--accept-mismatch" in str(refused.value)
    assert not Run.objects.filter(job="imported").exists()


def test_it_refuses_every_file_before_storing_any_when_one_contradicts_the_config(tmp_path, demo):
    good, other = tmp_path / "good.json", tmp_path / "other.json"
    good.write_bytes(guidellm_of(""))
    other.write_bytes(guidellm_of("gemma-3-270m"))
    with pytest.raises(CommandError, match=r"other\.json does not match"):
        call_command("importruns", str(good), str(other), "--config", "sim-moe-mtp8")
    assert not Run.objects.filter(job="imported").exists()


def test_it_records_an_accepted_mismatch_on_the_run_with_both_sides(tmp_path, capsys, demo):
    path = tmp_path / "benchmarks.json"
    path.write_bytes(guidellm_of("gemma-3-270m"))
    capsys.readouterr()  # the demo's own lines
    call_command("importruns", str(path), "--config", "sim-moe-mtp8", "--accept-mismatch")
    (printed,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    run = Run.objects.get(job="imported")
    (accepted,) = run.provenance["imported_from"]["accepted_mismatch"]
    assert (accepted["what"], accepted["file"], accepted["config"]) == (
        "model", "gemma-3-270m", "/models/sim-moe-80b-a3b-Q4_K_M.gguf")
    assert printed["accepted_mismatch"] == [accepted]


def test_it_refuses_a_mismatch_through_import_file_unless_accepted():
    config = EngineConfigFactory()
    data = encoded(vllm_result(model="gemma-3-1b"))
    with pytest.raises(Mismatched, match="the file's model is gemma-3-1b"):
        import_file("v.json", data, config, UserFactory())
    assert not Run.objects.exists()
    (run,) = import_file("v.json", data, config, UserFactory(), accept_mismatch=True).added
    assert run.provenance["imported_from"]["accepted_mismatch"][0]["what"] == "model"
