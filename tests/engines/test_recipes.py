from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.urls import reverse

from engines import kinds
from engines.recipes import LaunchSettings, Recipe, render, render_config, settings_from_config
from engines.recipes.field_words import field_of, field_words
from tests.factories import EngineConfigFactory, EngineFactory

DATA = Path(__file__).parent / "data"
REFERENCE = {
    "llama-server": "llama_server_flags.txt",
    "vllm": "vllm_serve_flags.txt",
    "sglang": "sglang_server_flags.txt",
    "ollama": "ollama_env_and_modelfile.txt",
}
REMOVED_LLAMA_FLAGS = {"--draft", "--draft-n", "--draft-max", "--draft-min", "--draft-n-min"}
# An allowed extra flag per kind (engines.recipes.<kind>.ALLOWED_FLAGS), appended after the rendered ones.
EXTRA = {"llama-server": "-ngl 99", "vllm": "--enforce-eager", "sglang": "--disable-cuda-graph",
         "ollama": "OLLAMA_FLASH_ATTENTION=1"}
# One value per optional field; each is set alone, then all together.
FIELDS = {
    "quantization": ["fp8", "Q4_K_M"],
    "draft_n_min": [2],
    "draft_p_min": [0.6],
    "context_length": [32768],
    "parallel": [4],
    "threads": [8],
    "cache_ram_mib": [4096, -1, 0],
    "kv_cache_dtype": ["q8_0"],
    "prefix_caching": [True, False],
    "max_num_batched_tokens": [4096],
    "attention_backend": ["flashinfer"],
    "moe_backend": ["triton"],
    "thinking": ["on", "off"],
    "extra_flags": ["(the kind's EXTRA)"],
}
# Speculative variants that each engine can run: (speculative_method, draft_model).
SPECULATIVE = {
    "llama-server": [
        ("", ""), ("draft-simple", "/m/draft.gguf"), ("draft-mtp", ""), ("draft-eagle3", "/m/e3.gguf"),
        ("ngram-mod", ""), ("ngram-simple", ""), ("ngram-cache", ""), ("draft-simple,ngram-mod", "/m/d.gguf"),
    ],
    "vllm": [
        ("", ""), ("draft_model", "org/draft"), ("eagle3", "org/eagle3"), ("mtp", ""), ("ngram", ""),
        ("dflash", "org/dflash"), ("qwen3_next_mtp", ""),
    ],
    "sglang": [("", ""), ("EAGLE3", "org/eagle3"), ("NEXTN", ""), ("STANDALONE", "org/draft"), ("NGRAM", ""),
               ("DFLASH", "org/dflash")],
    "ollama": [("", ""), ("mtp", ""), ("draft-simple", "qwen3:0.6b"), ("none", "")],
}  # fmt: skip
# argv tokens that name the program (the interpreter's "-m" is not a server flag).
PROGRAM = {"llama-server": 1, "vllm": 2, "sglang": 3, "ollama": 2}
MODEL = {
    "llama-server": "/models/q.gguf",
    "vllm": "Qwen/Qwen3-8B",
    "sglang": "Qwen/Qwen3-8B",
    "ollama": "qwen3:8b",
}


def _reference(kind: str) -> set[str]:
    lines = (DATA / REFERENCE[kind]).read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def _settings(kind: str, method: str = "", draft: str = "", **values) -> LaunchSettings:
    values.setdefault("lookahead", 4 if method and method != "none" else 0)
    values.setdefault("model", MODEL[kind])
    return LaunchSettings(kind=kind, speculative_method=method, draft_model=draft, **values)


def _matrix(kind: str) -> list[LaunchSettings]:
    fields = FIELDS | {"extra_flags": [EXTRA[kind]]}
    everything = {name: values[0] for name, values in fields.items()}
    cases = []
    for method, draft in SPECULATIVE[kind]:
        cases.append(_settings(kind, method, draft))
        cases.append(_settings(kind, method, draft, **everything))
        cases += [_settings(kind, method, draft, **{n: v}) for n, vs in fields.items() for v in vs]
    return cases


def _flags(recipe: Recipe, settings: LaunchSettings) -> list[str]:
    """Every argv token that starts with "-", less values (numbers) and the extra flags."""
    argv = recipe.argv[PROGRAM[recipe.kind] : len(recipe.argv) - len(shlex.split(settings.extra_flags))]
    return [t for t in argv if t.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", t)]


@pytest.mark.parametrize("kind", ["llama-server", "vllm", "sglang"])
def test_it_renders_only_documented_flags(kind):
    reference = _reference(kind)
    for settings in _matrix(kind):
        recipe = render(settings)
        unknown = set(_flags(recipe, settings)) - reference
        assert not unknown, f"{settings}: {unknown}"


def test_it_uses_only_documented_ollama_names():
    reference = _reference("ollama")
    for settings in _matrix("ollama"):
        recipe = render(settings)
        modelfile = recipe.files.get("Modelfile", "")
        words = {line.split()[0] for line in modelfile.splitlines()}
        params = {line.split()[1] for line in modelfile.splitlines() if line.startswith("PARAMETER")}
        for call in recipe.api_calls:
            params |= set(call["json"]["parameters"])
        unknown = (set(recipe.env) | words | params) - reference
        assert not unknown, f"{settings}: {unknown}"
        assert recipe.argv[:2] == ["ollama", "serve"] and not _flags(recipe, settings)


def test_it_checks_each_reference_list_names_its_source():
    for kind, name in REFERENCE.items():
        text = (DATA / name).read_text()
        assert text.startswith("# "), name
        assert "Source" in text.split("\n\n")[0] or "Sources" in text, name
        assert len(_reference(kind)) > 50, name
    assert "b11434" in (DATA / REFERENCE["llama-server"]).read_text().splitlines()[0]


def test_it_renders_draft_simple_with_a_draft_model_and_n_max():
    recipe = render(_settings("llama-server", "draft-simple", "/m/draft.gguf", lookahead=8))
    argv = recipe.argv
    assert argv[:3] == ["llama-server", "-m", "/models/q.gguf"]
    assert argv[argv.index("--spec-type") + 1] == "draft-simple"
    assert argv[argv.index("-md") + 1] == "/m/draft.gguf"
    assert argv[argv.index("--spec-draft-n-max") + 1] == "8"
    assert "--metrics" in argv


def test_it_never_renders_removed_draft_flags():
    for settings in _matrix("llama-server"):
        assert not REMOVED_LLAMA_FLAGS & set(_flags(render(settings), settings))
    assert not REMOVED_LLAMA_FLAGS & _reference("llama-server")


def test_it_renders_llama_server_settings():
    settings = _settings(
        "llama-server", "draft-mtp", lookahead=3, draft_n_min=1, draft_p_min=0.5, context_length=65536,
        parallel=2, threads=16, cache_ram_mib=-1, kv_cache_dtype="q8_0", prefix_caching=False,
    )  # fmt: skip
    line = render(settings).command_line()
    for part in [
        "--host 127.0.0.1 --port 8080", "-c 65536", "-np 2", "-t 16", "--cache-ram -1", "-ctk q8_0 -ctv q8_0",
        "--no-cache-prompt", "--spec-type draft-mtp", "--spec-draft-n-max 3", "--spec-draft-n-min 1",
        "--spec-draft-p-min 0.5",
    ]:  # fmt: skip
        assert part in line
    assert "-md" not in line


def test_it_renders_ngram_lookahead_with_the_ngram_flag():
    argv = render(_settings("llama-server", "ngram-mod", lookahead=24, draft_n_min=8)).argv
    assert argv[argv.index("--spec-ngram-mod-n-max") + 1] == "24"
    assert argv[argv.index("--spec-ngram-mod-n-min") + 1] == "8"
    assert "--spec-draft-n-max" not in argv


def test_it_renders_the_vllm_speculative_config_as_json():
    argv = render(_settings("vllm", "eagle3", "org/eagle3", lookahead=5)).argv
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen3-8B"]
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config == {"method": "eagle3", "model": "org/eagle3", "num_speculative_tokens": 5}
    mtp = render(_settings("vllm", "draft-mtp", lookahead=1)).argv
    assert json.loads(mtp[mtp.index("--speculative-config") + 1]) == {
        "method": "mtp",
        "num_speculative_tokens": 1,
    }


def test_it_renders_vllm_settings():
    settings = _settings(
        "vllm", context_length=32768, parallel=8, max_num_batched_tokens=8192, kv_cache_dtype="fp8",
        attention_backend="FLASHINFER", moe_backend="triton", quantization="FP8",
    )  # fmt: skip
    line = render(settings).command_line()
    for part in [
        "--max-model-len 32768", "--max-num-seqs 8", "--max-num-batched-tokens 8192", "--kv-cache-dtype fp8",
        "--attention-backend FLASHINFER", "--moe-backend triton", "--quantization fp8",
    ]:  # fmt: skip
        assert part in line
    assert "--enable-prefix-caching" in render(_settings("vllm", prefix_caching=True)).argv
    assert "--no-enable-prefix-caching" in render(_settings("vllm", prefix_caching=False)).argv
    assert "prefix-caching" not in render(_settings("vllm")).command_line()


def test_it_starts_vllm_through_python_m_when_the_binary_names_the_server_module():
    launcher = "/opt/vllm/bin/python -m vllm.entrypoints.openai.api_server"
    argv = render(_settings("vllm", "ngram", lookahead=4, binary=launcher)).argv
    assert argv[:5] == [*launcher.split(), "--model", "Qwen/Qwen3-8B"]
    assert "serve" not in argv and "--speculative-config" in argv
    # A launcher script (the CPU build's) is still a binary: it runs `serve` as the console script does.
    script = render(_settings("vllm", binary="/cache/bin/vllm")).argv
    assert script[:3] == ["/cache/bin/vllm", "serve", "Qwen/Qwen3-8B"]
    with pytest.raises(ValueError, match=r"^binary: "):
        render(_settings("vllm", binary='/opt/python -m "vllm'))


def test_it_renders_sglang_chain_speculation():
    recipe = render(
        _settings("sglang", "eagle3", "org/eagle3", lookahead=3, parallel=4, prefix_caching=False)
    )
    assert recipe.argv[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B"]
    line = recipe.command_line()
    for part in [
        "--enable-metrics", "--speculative-algorithm EAGLE3", "--speculative-draft-model-path org/eagle3",
        "--speculative-num-steps 3", "--speculative-eagle-topk 1", "--speculative-num-draft-tokens 4",
        "--max-running-requests 4", "--disable-radix-cache",
    ]:  # fmt: skip
        assert part in line
    assert "--disable-radix-cache" not in render(_settings("sglang", prefix_caching=True)).argv


def test_it_creates_an_ollama_alias_through_api_create():
    settings = _settings(
        "ollama", "mtp", lookahead=3, parallel=2, context_length=65536, cache_ram_mib=0,
        kv_cache_dtype="q8_0", host="0.0.0.0", port=11500,
    )  # fmt: skip
    recipe = render(settings)
    assert recipe.env == {
        "OLLAMA_HOST": "0.0.0.0:11500",
        "OLLAMA_NUM_PARALLEL": "2",
        "OLLAMA_CONTEXT_LENGTH": "65536",
        "OLLAMA_KV_CACHE_TYPE": "q8_0",
        "LLAMA_ARG_CACHE_RAM": "0",
    }
    assert (
        recipe.files["Modelfile"] == "FROM qwen3:8b\nPARAMETER draft_num_predict 3\nPARAMETER num_ctx 65536\n"
    )
    [call] = recipe.api_calls
    assert call["method"] == "POST" and call["path"] == "/api/create"
    assert call["json"] == {
        "model": "qwen3-8b-sd-la3-c65536",
        "from": "qwen3:8b",
        "parameters": {"draft_num_predict": 3, "num_ctx": 65536},
    }
    assert any("restart" in note for note in recipe.notes)


def test_it_names_ollama_aliases_deterministically():
    first = render(_settings("ollama", "draft-simple", "qwen3:0.6b", lookahead=6, threads=8))
    again = render(_settings("ollama", "draft-simple", "qwen3:0.6b", lookahead=6, threads=8))
    other = render(_settings("ollama", "draft-simple", "qwen3:1.7b", lookahead=6, threads=8))
    assert first.files == again.files and first.notes == again.notes
    assert "DRAFT qwen3:0.6b" in first.files["Modelfile"]
    alias = next(n for n in first.notes if n.startswith("create the alias"))
    assert re.search(r"ollama create qwen3-8b-sd-la6-t8-d[0-9a-f]{8} -f Modelfile", alias)
    assert alias != next(n for n in other.notes if n.startswith("create the alias"))
    assert render(_settings("ollama", "none")).files["Modelfile"].endswith("PARAMETER draft_num_predict 0\n")


# Lookahead 0 is no drafting, whatever the kind and the speculative method (issue 15).
LOOKAHEAD_0 = [
    ("llama-server", "draft-mtp", ""), ("llama-server", "draft-simple", "/m/draft.gguf"),
    ("llama-server", "ngram-mod", ""), ("vllm", "mtp", ""), ("vllm", "eagle3", "org/eagle3"),
    ("vllm", "suffix", ""), ("sglang", "NEXTN", ""), ("sglang", "EAGLE3", "org/eagle3"),
]  # fmt: skip
SPECULATIVE_FLAGS = ("--spec", "-md", "--speculative")


@pytest.mark.parametrize(("kind", "method", "draft"), LOOKAHEAD_0)
def test_it_turns_speculative_decoding_off_at_lookahead_0(kind, method, draft):
    on = render(_settings(kind, method, draft, lookahead=4))
    off = render(_settings(kind, method, draft, lookahead=0))
    assert any(t.startswith(SPECULATIVE_FLAGS) for t in on.argv)
    assert not [t for t in off.argv if t.startswith(SPECULATIVE_FLAGS)]
    assert any(n.startswith("lookahead is 0: speculative decoding is off") for n in off.notes)


@pytest.mark.parametrize("method", ["", "mtp", "draft-mtp", "none"])
def test_it_makes_an_ollama_alias_with_draft_num_predict_0_at_lookahead_0(method):
    recipe = render(_settings("ollama", method, lookahead=0))
    assert recipe.files["Modelfile"] == "FROM qwen3:8b\nPARAMETER draft_num_predict 0\n"
    assert recipe.api_calls[0]["json"] == {
        "model": "qwen3-8b-sd-la0", "from": "qwen3:8b", "parameters": {"draft_num_predict": 0}
    }


@pytest.mark.parametrize(
    ("kind", "changes", "field"),
    [
        ("llama-server", {"speculative_method": "draft-simple", "lookahead": 8}, "draft_model"),
        ("llama-server", {"speculative_method": "draft-eagle3", "lookahead": 3}, "draft_model"),
        ("llama-server", {"speculative_method": "ngram-mod", "draft_model": "/m/d.gguf"}, "draft_model"),
        ("llama-server", {"draft_model": "/m/d.gguf"}, "draft_model"),
        ("llama-server", {"speculative_method": "medusa"}, "speculative_method"),
        ("llama-server", {"extra_flags": "--jinja 'unclosed"}, "extra_flags"),
        ("vllm", {"speculative_method": "eagle3", "lookahead": 3}, "draft_model"),
        ("vllm", {"speculative_method": "ngram", "lookahead": 3, "draft_model": "org/d"}, "draft_model"),
        ("vllm", {"speculative_method": "draft-mtp-typo", "lookahead": 3}, "speculative_method"),
        ("sglang", {"speculative_method": "EAGLE", "lookahead": 3}, "draft_model"),
        ("sglang", {"speculative_method": "NGRAM", "draft_model": "org/d"}, "draft_model"),
        ("sglang", {"speculative_method": "lookahead"}, "speculative_method"),
        ("ollama", {"speculative_method": "draft-simple", "lookahead": 4}, "draft_model"),
        ("ollama", {"speculative_method": "eagle3", "lookahead": 4}, "speculative_method"),
        ("ollama", {"draft_model": "qwen3:0.6b"}, "draft_model"),
    ],
)
def test_it_rejects_impossible_combinations_naming_the_field(kind, changes, field):
    with pytest.raises(ValueError, match=rf"^{field_words(field)}: ") as refused:
        render(LaunchSettings(kind=kind, model=MODEL[kind], **changes))
    assert field_of(str(refused.value).partition(":")[0]) == field


def test_it_rejects_unknown_kinds_and_empty_models():
    with pytest.raises(ValueError, match=r"^kind: "):
        LaunchSettings(kind="tgi", model="m")
    with pytest.raises(ValueError, match=r"^model: "):
        LaunchSettings(kind="vllm", model="")


@pytest.mark.parametrize("kind", kinds.names())
def test_it_round_trips_the_command_line_through_shlex(kind):
    for settings in _matrix(kind):
        recipe = render(settings)
        lines = recipe.shell().splitlines()
        assert recipe.command_line() in lines
        assert shlex.split(recipe.command_line()) == recipe.argv


def test_it_quotes_awkward_values_in_the_shell_snippet():
    settings = _settings("llama-server", model="/models/my model's.gguf", extra_flags="'-fa' on --prio=2")
    recipe = render(settings)
    assert recipe.argv[2] == "/models/my model's.gguf"
    assert recipe.argv[-4:] == ["-fa", "on", "--prio", "2"]
    assert shlex.split(recipe.command_line()) == recipe.argv
    ollama = render(_settings("ollama", "mtp", lookahead=2, kv_cache_dtype="q8_0 x"))
    assert "export OLLAMA_KV_CACHE_TYPE='q8_0 x'" in ollama.shell()


def test_it_writes_files_as_heredocs_and_api_calls_as_comments():
    shell = render(_settings("ollama", "mtp", lookahead=2)).shell()
    lines = shell.splitlines()
    start = lines.index("cat > Modelfile <<'SPARKDASH_EOF'")
    assert lines[start + 1 : start + 4] == ["FROM qwen3:8b", "PARAMETER draft_num_predict 2", "SPARKDASH_EOF"]
    assert lines.index("ollama serve") > start
    curl = [line for line in lines if "curl" in line]
    assert curl and all(line.startswith("# ") for line in curl)
    body = shlex.split(curl[0][2:])[-1]
    assert json.loads(body)["from"] == "qwen3:8b"


def test_it_appends_ollama_extra_assignments_to_the_environment():
    recipe = render(_settings("ollama", extra_flags="OLLAMA_FLASH_ATTENTION=1 OLLAMA_KEEP_ALIVE=-1"))
    assert recipe.env["OLLAMA_FLASH_ATTENTION"] == "1"
    assert recipe.env["OLLAMA_KEEP_ALIVE"] == "-1"
    assert recipe.argv == ["ollama", "serve"]


def test_it_notes_settings_it_does_not_render():
    notes = render(_settings("vllm", threads=8, cache_ram_mib=2048, quantization="Q4_K_M")).notes
    assert any(n.startswith("threads (8) is not rendered") for n in notes)
    assert any(n.startswith("prompt cache RAM (2048) is not rendered") for n in notes)
    assert any(n.startswith("quantization (Q4_K_M) is not rendered") for n in notes)
    notes = render(_settings("llama-server", attention_backend="flashinfer", lookahead=4)).notes
    assert any(n.startswith("attention backend (flashinfer)") for n in notes)
    assert any(n.startswith("lookahead (4) is not rendered") for n in notes)


def _config(kind="llama-server", base_url="http://10.0.0.5:18080", binary="", **values):
    engine = SimpleNamespace(kind=kind, base_url=base_url, binary=binary)
    fields = {"model": " /models/q.gguf ", "lookahead": 0, "speculative_method": "", "draft_model": ""}
    return SimpleNamespace(engine=engine, **(fields | values))


def test_it_reads_settings_from_a_config_like_object():
    settings = settings_from_config(_config(speculative_method=" draft-mtp ", lookahead=4, parallel=None))
    assert (settings.host, settings.port, settings.binary) == ("10.0.0.5", 18080, "llama-server")
    assert (settings.model, settings.speculative_method, settings.lookahead) == (
        "/models/q.gguf",
        "draft-mtp",
        4,
    )
    assert settings.parallel is None and settings.metrics
    custom = settings_from_config(_config("vllm", "http://spark.local", "/opt/venv/bin/vllm"))
    assert (custom.host, custom.port, custom.binary) == ("spark.local", 8000, "/opt/venv/bin/vllm")
    assert render(custom).argv[:2] == ["/opt/venv/bin/vllm", "serve"]
    ipv6 = settings_from_config(_config("ollama", "http://[::1]:11434"))
    assert render(ipv6).env["OLLAMA_HOST"] == "[::1]:11434"


def test_it_reports_configs_it_cannot_render():
    recipe, error = render_config(_config(speculative_method="draft-simple", lookahead=8))
    assert recipe is None
    assert error.startswith("draft model: ")
    recipe, error = render_config(_config())
    assert recipe is not None and error == ""


def test_it_keeps_recipes_free_of_django():
    code = "import sys, engines.recipes; sys.exit(any(m.split('.')[0] == 'django' for m in sys.modules))"
    root = Path(__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=root, check=False).returncode == 0


@pytest.mark.django_db
def test_it_shows_the_launch_recipe_on_the_config_page(alice_client):
    engine = EngineFactory(base_url="http://127.0.0.1:18099")
    config = EngineConfigFactory(
        engine=engine, speculative_method="draft-mtp", lookahead=4, context_length=8192
    )
    recipe, _ = render_config(config)
    content = alice_client.get(reverse("runs:config-detail", args=[config.pk])).content.decode()
    assert "Launch recipe" in content
    assert html.escape(recipe.command_line()) in content
    assert "--spec-type draft-mtp --spec-draft-n-max 4" in content
    assert "--port 18099" in content and "-c 8192" in content


@pytest.mark.django_db
def test_it_says_why_a_config_has_no_launch_recipe(alice_client):
    config = EngineConfigFactory(speculative_method="draft-simple", lookahead=8)
    response = alice_client.get(reverse("runs:config-detail", args=[config.pk]))
    assert response.status_code == 200
    assert "No launch recipe: draft model: draft-simple needs a draft model" in response.content.decode()


@pytest.mark.parametrize(
    ("thinking", "budget", "expected"),
    [("off", None, ["--reasoning-budget", "0"]), ("on", None, ["--reasoning-budget", "-1"]),
     ("budget", 4096, ["--reasoning-budget", "4096"])],
)
def test_it_renders_llama_servers_reasoning_budget_and_format(thinking, budget, expected):
    argv = render(_settings("llama-server", thinking=thinking, thinking_budget=budget)).argv
    assert _pair(argv, "--reasoning-budget") == expected
    assert _pair(argv, "--reasoning-format") == ["--reasoning-format", "deepseek"]


def _pair(argv: list[str], flag: str) -> list[str]:
    return argv[argv.index(flag) : argv.index(flag) + 2] if flag in argv else []


@pytest.mark.parametrize("kind", ["llama-server", "vllm", "sglang"])
def test_it_renders_no_reasoning_flag_when_thinking_is_the_engines_default(kind):
    argv = render(_settings(kind)).argv
    assert not {"--reasoning-budget", "--reasoning-format", "--reasoning-parser"} & set(argv)


@pytest.mark.parametrize(
    ("kind", "model", "parser"),
    [("vllm", "Qwen/Qwen3-8B", "qwen3"), ("sglang", "Qwen/Qwen3-8B", "qwen3"),
     ("vllm", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek_r1"),
     ("sglang", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1"),
     ("vllm", "openai/gpt-oss-20b", "openai_gptoss"), ("sglang", "openai/gpt-oss-20b", "gpt-oss")],
)
def test_it_picks_the_reasoning_parser_from_the_model_family(kind, model, parser):
    argv = render(_settings(kind, model=model, thinking="on")).argv
    assert _pair(argv, "--reasoning-parser") == ["--reasoning-parser", parser]


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_it_renders_the_configs_own_reasoning_parser_and_notes_a_budget_it_cannot(kind):
    recipe = render(_settings(kind, model="org/thinker", thinking="budget", thinking_budget=2048,
                              reasoning_parser="deepseek_r1"))
    assert _pair(recipe.argv, "--reasoning-parser") == ["--reasoning-parser", "deepseek_r1"]
    assert any(note.startswith("thinking budget (2048) is not rendered") for note in recipe.notes)


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_it_refuses_thinking_on_a_model_whose_parser_it_cannot_guess(kind):
    with pytest.raises(ValueError, match=r"^reasoning parser: none known for 'org/thinker'"):
        render(_settings(kind, model="org/thinker", thinking="on"))


@pytest.mark.parametrize(
    ("values", "message"),
    [({"thinking": "budget"}, r"^thinking budget: thinking 'budget' needs"),
     ({"thinking": "on", "thinking_budget": 64}, r"^thinking budget: set, but"),
     ({"thinking": "maybe"}, r"^thinking: 'maybe' is not one of")],
)
def test_it_refuses_thinking_settings_no_engine_can_run(values, message):
    with pytest.raises(ValueError, match=message):
        render(_settings("llama-server", **values))


def test_it_sends_ollamas_thinking_per_request_and_notes_the_budget_it_cannot():
    recipe = render(_settings("ollama", thinking="budget", thinking_budget=1024))
    assert "thinking (budget) is sent with every request (think), not at launch" in recipe.notes
    assert any(note.startswith("thinking budget (1024) is not rendered") for note in recipe.notes)
    assert not any("think" in name.lower() for name in recipe.env)


def test_it_reads_thinking_from_a_config():
    config = SimpleNamespace(
        model="/m/q.gguf", lookahead=0, thinking="budget", thinking_budget=512, reasoning_parser="",
        engine=SimpleNamespace(kind="llama-server", base_url="http://127.0.0.1:8080", binary=""),
    )
    recipe, why = render_config(config)
    assert why == "" and recipe is not None
    assert _pair(recipe.argv, "--reasoning-budget") == ["--reasoning-budget", "512"]
