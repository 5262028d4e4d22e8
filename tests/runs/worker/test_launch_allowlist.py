"""End to end: a managed engine whose binary is a recorder (it writes its argv and environment to a
file, then exits). Configs written straight to the database, behind every form, carrying a refused
flag, an environment assignment or a path model are started from the config page like any run: the
worker checks them again before the launch (runs/worker/engine_session.py), so the recorder never
runs with them and each run fails naming the flag and why; allowed flags with valid values reach it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from engines.models import Engine, EngineConfig, EngineSession
from runs.models import Run
from runs.worker import execution
from tests.factories import EngineConfigFactory
from tests.real_engine import free_port

pytestmark = pytest.mark.django_db(transaction=True)

RECORDER = """#!{python}
import json, os, sys
with open({record!r}, "a") as out:
    env = {{k: v for k, v in os.environ.items() if k.startswith(("OLLAMA_", "LD_"))}}
    out.write(json.dumps({{"argv": sys.argv, "env": env}}) + "\\n")
sys.exit(3)
"""


@pytest.fixture
def recorder(tmp_path, monkeypatch) -> Path:
    """An engine binary that records each launch in launches.jsonl; models live in tmp_path/models."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "q.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    monkeypatch.setenv("SPARKDASH_MODEL_DIRS", str(tmp_path / "models"))
    monkeypatch.delenv("SPARKDASH_ALLOW_FLAGS", raising=False)
    # The run is queued by the page, then executed as its machine's worker does, on either backend.
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)
    binary = tmp_path / "engine-recorder"
    binary.write_text(RECORDER.format(python=sys.executable, record=str(tmp_path / "launches.jsonl")))
    binary.chmod(0o755)
    return binary


def launches(recorder: Path) -> list[dict]:
    record = recorder.parent / "launches.jsonl"
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def managed(recorder: Path, kind: str, **fields) -> EngineConfig:
    """A config of a managed engine whose binary is the recorder, created without any form's check."""
    engine = {"engine__kind": kind, "engine__launch": Engine.Launch.MANAGED, "engine__binary": str(recorder),
              "engine__base_url": f"http://127.0.0.1:{free_port()}"}  # fmt: skip
    return EngineConfigFactory(**engine, **fields)


def start_and_run(client, config: EngineConfig) -> Run:
    """Start a speed run from the config's page, then execute it as the machine's worker does."""
    url = reverse("runs:config-start-run", args=[config.pk])
    response = client.post(url, {"reps": "1", "max_tokens": "8"})
    assert response.status_code == 302, response.content.decode()[:500]
    run = Run.objects.get(config=config)
    assert execution.claim(run.pk) == execution.CLAIMED
    execution.execute(run.pk)
    run.refresh_from_db()
    return run


HUB, GGUF = "org/name", "q.gguf"  # a hub id; a model by name in the model directory


@pytest.mark.parametrize(
    ("kind", "fields", "reason"),
    [
        ("vllm", {"model": HUB, "extra_flags": "--pythonpath /tmp/evil --settings evil"},
         "--pythonpath loads code: refused for every user"),
        ("sglang", {"model": HUB, "extra_flags": "--settings evil"}, "--settings loads code"),
        ("llama-server", {"model": GGUF, "extra_flags": "--path /"}, "--path reads a file"),
        ("llama-server", {"model": GGUF, "extra_flags": "--host 0.0.0.0"}, "--host binds a host or port"),
        ("llama-server", {"model": GGUF, "extra_flags": "--log-file=/tmp/x"}, "--log-file writes a file"),
        ("vllm", {"model": HUB, "extra_flags": "--trust-remote-code"}, "--trust-remote-code loads code"),
        ("sglang", {"model": HUB, "extra_flags": "--trust-remote-code"}, "--trust-remote-code loads code"),
        ("ollama", {"model": "qwen3:8b", "extra_flags": "LD_PRELOAD=/tmp/x.so"}, "LD_PRELOAD loads code"),
        ("vllm", {"model": HUB, "extra_flags": "LD_PRELOAD=/tmp/x.so"}, "LD_PRELOAD sets the environment"),
        ("llama-server", {"model": "/etc/passwd"}, "model: '/etc/passwd' is not a model name inside"),
        ("llama-server", {"model": GGUF, "speculative_method": "draft-simple", "lookahead": 4,
                          "draft_model": "../../etc/shadow"}, "draft model: '../../etc/shadow' is not"),
    ],
)
def test_it_never_launches_a_refused_flag_environment_or_path_model_written_to_the_database(
    alice_client, recorder, kind, fields, reason
):
    config = managed(recorder, kind, **fields)
    run = start_and_run(alice_client, config)
    assert run.status == Run.Status.FAILED and run.error.startswith("launch refused: ")
    assert reason in run.error
    assert launches(recorder) == []  # the recorder never ran
    assert not EngineSession.objects.filter(run_id=run.pk).exists()  # nor was any start recorded


def test_it_never_launches_a_refused_flag_written_by_an_update(alice_client, recorder):
    config = managed(recorder, "llama-server", model="q.gguf", extra_flags="-ngl 99")
    EngineConfig.objects.filter(pk=config.pk).update(extra_flags="-ngl 99 --log-file /tmp/sparkdash-x.log")
    run = start_and_run(alice_client, config)
    assert "--log-file writes a file: refused for every user" in run.error
    assert launches(recorder) == []


def test_it_never_launches_a_simulator_with_django_options(alice_client, recorder):
    config = managed(recorder, "llama-server", model="demo", engine__simulator=True,
                     extra_flags="--decode-tps 300 --pythonpath /tmp/evil --settings evil")
    run = start_and_run(alice_client, config)
    assert "--pythonpath loads code: refused for every user" in run.error
    assert not EngineSession.objects.filter(run_id=run.pk).exists()


def test_it_launches_allowed_flags_with_valid_values_and_models_by_name(alice_client, recorder):
    run = start_and_run(alice_client, managed(recorder, "llama-server", model="q.gguf",
                                              extra_flags="-ngl 99 --flash-attn=on --jinja"))
    assert "exited at once" in run.error  # the recorder exits: the launch itself went through
    [launch] = launches(recorder)
    argv = launch["argv"]
    assert argv[argv.index("-m") + 1] == str(recorder.parent / "models" / "q.gguf")
    assert argv[-5:] == ["-ngl", "99", "--flash-attn", "on", "--jinja"]
    assert EngineSession.objects.get(run_id=run.pk).command[1:] == argv[1:]


def test_it_launches_ollama_with_its_allowed_environment_only(alice_client, recorder):
    config = managed(recorder, "ollama", model="qwen3:8b", extra_flags="OLLAMA_FLASH_ATTENTION=1")
    start_and_run(alice_client, config)
    [launch] = launches(recorder)
    assert launch["argv"][1:] == ["serve"]
    assert launch["env"]["OLLAMA_FLASH_ATTENTION"] == "1" and "LD_PRELOAD" not in launch["env"]


def test_it_fails_a_run_whose_config_its_recipe_refuses_naming_the_setting(alice_client, recorder):
    config = managed(recorder, "llama-server", model=GGUF, lookahead=4)
    # Written behind the form, which refuses it (tests/engines/test_launch_checks.py).
    EngineConfig.objects.filter(pk=config.pk).update(speculative_method="draft-simple")
    run = start_and_run(alice_client, config)
    assert run.status == Run.Status.FAILED
    assert "internal error" not in run.error
    reason = "the config's launch settings cannot run: draft model: draft-simple needs a draft model"
    assert reason in run.error
    assert launches(recorder) == []
