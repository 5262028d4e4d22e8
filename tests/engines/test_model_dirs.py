"""engines/recipes/model_dirs.py: models by name inside this machine's model directories, no oracle."""
from __future__ import annotations

import os

import pytest

from engines.recipes.model_dirs import local_file, local_gguf, model_dirs, model_refusal, resolve_model

pytestmark = pytest.mark.backend_free


@pytest.fixture
def models(tmp_path, monkeypatch):
    """A model directory holding a GGUF, a file that is not one, and a link out of it."""
    folder = tmp_path / "models"
    (folder / "org").mkdir(parents=True)
    (folder / "q.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(64))
    (folder / "notes.gguf").write_bytes(b"root:x:0:0:secret")
    (folder / "org" / "folder-model").mkdir()
    (tmp_path / "outside.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(64))
    (folder / "escape.gguf").symlink_to(tmp_path / "outside.gguf")
    (folder / "up").symlink_to(tmp_path)
    monkeypatch.setenv("SPARKDASH_MODEL_DIRS", f"{folder}:{tmp_path / 'missing-dir'}")
    return folder



def test_it_refuses_paths_outside_the_model_dirs_with_one_message_whether_or_not_they_exist(models, tmp_path):
    existing, missing = "/etc/passwd", "/etc/no-such-file-here"
    refusals = [model_refusal("model", path) for path in (existing, missing)]
    assert all(r is not None for r in refusals)
    assert str(refusals[0]).replace(repr(existing), "M") == str(refusals[1]).replace(repr(missing), "M")
    assert "is not a model name inside this machine's model directories" in refusals[0]
    outside = [str(tmp_path / "outside.gguf"), str(models / "escape.gguf"),
               str(models / "up" / "outside.gguf"), str(models / ".." / "outside.gguf"), "../outside.gguf",
               "org/../../outside.gguf",
               str(models / "up" / "no-such.gguf"), "~/../../etc/passwd", "-m", "--trust-remote-code"]
    for path in outside:
        assert model_refusal("model", path) is not None, path
    assert model_refusal("draft_model", "/etc/passwd").startswith("draft model: ")


def test_it_allows_names_hub_ids_tags_and_paths_inside_the_model_dirs(models):
    for model in ("q.gguf", "org/folder-model", "Qwen/Qwen3-8B", "qwen3:8b", "hf.co/org/repo:Q4_K_M",
                  str(models / "q.gguf"), str(models / "not-there-yet.gguf"), "demo"):
        assert model_refusal("model", model) is None, model


def test_it_resolves_a_name_inside_the_model_dirs_and_leaves_hub_ids_to_the_engine(models):
    assert resolve_model("q.gguf") == str(models / "q.gguf")
    assert resolve_model("org/folder-model") == str(models / "org" / "folder-model")
    assert resolve_model("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert resolve_model("escape.gguf") == "escape.gguf"  # a link out is not a model of ours


def test_it_reads_only_gguf_files_inside_the_model_dirs(models, tmp_path):
    assert local_gguf(str(models / "q.gguf")) == models / "q.gguf"
    assert local_gguf("q.gguf") == models / "q.gguf"
    assert local_gguf(str(models / "notes.gguf")) is None  # inside, but not a GGUF: its bytes stay unread
    assert local_file(str(models / "notes.gguf")) == models / "notes.gguf"
    for model in (str(tmp_path / "outside.gguf"), str(models / "escape.gguf"), "escape.gguf", "/etc/passwd",
                  "org/folder-model", "Qwen/Qwen3-8B"):
        assert local_gguf(model) is None and (local_file(model) is None or model == "org/folder-model"), model


def test_it_takes_the_model_dirs_from_this_machines_environment(monkeypatch):
    monkeypatch.delenv("SPARKDASH_MODEL_DIRS", raising=False)
    monkeypatch.setenv("SPARKDASH_ENGINE_CACHE", "/srv/engine-cache")
    home = os.path.expanduser("~")
    assert [str(d) for d in model_dirs()] == [f"{home}/models", "/models", "/srv/engine-cache/models"]
    monkeypatch.setenv("SPARKDASH_MODEL_DIRS", "")
    assert model_dirs() == [] and model_refusal("model", "/models/q.gguf") is not None
