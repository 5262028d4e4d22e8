"""engines/recipes/flags.py and each kind's ALLOWED_FLAGS: extra flags are checked data, not a shell line."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from django.core.management import load_command_class

from engines import kinds, simulator
from engines.recipes import LaunchSettings, render
from engines.recipes import simulator as simulator_flags
from engines.recipes.checks import allowlist_markdown, launch_refusal
from engines.recipes.flags import REFUSED, checked
from engines.simulator.reasoning import REASONING_STYLES

pytestmark = pytest.mark.backend_free

README = Path(__file__).resolve().parents[2] / "README.md"
DATA = Path(__file__).parent / "data"
REFERENCE = {"llama-server": "llama_server_flags.txt", "vllm": "vllm_serve_flags.txt",
             "sglang": "sglang_server_flags.txt", "ollama": "ollama_env_and_modelfile.txt"}
MODEL = {"llama-server": "/models/q.gguf", "vllm": "Qwen/Qwen3-8B", "sglang": "Qwen/Qwen3-8B",
         "ollama": "qwen3:8b"}
# Each refused flag with the reason its error gives, on a kind whose command line could take it.
REFUSALS = [
    ("vllm", "--pythonpath /tmp/x --settings evil", "--pythonpath loads code: refused for every user"),
    ("sglang", "--settings evil", "--settings loads code: refused for every user"),
    ("llama-server", "--path /", "--path reads a file: refused for every user"),
    ("llama-server", "--host 0.0.0.0", "--host binds a host or port (the engine's base URL sets them)"),
    ("vllm", "--port=9000", "--port binds a host or port"),
    ("llama-server", "--log-file /tmp/x.log", "--log-file writes a file: refused for every user"),
    ("vllm", "--trust-remote-code", "--trust-remote-code loads code: refused for every user"),
    ("sglang", "--trust-remote-code", "--trust-remote-code loads code: refused for every user"),
    ("llama-server", "--chat-template-file /etc/shadow", "--chat-template-file reads a file"),
    ("llama-server", "-m /etc/passwd", "-m names a model or download (the model and draft model fields do)"),
    ("ollama", "LD_PRELOAD=/tmp/x.so", "LD_PRELOAD loads code: refused for every user"),
    ("ollama", "OLLAMA_HOST=0.0.0.0", "OLLAMA_HOST binds a host or port"),
    ("ollama", "OLLAMA_MODELS=/etc", "OLLAMA_MODELS reads a file"),
    ("vllm", "LD_PRELOAD=/tmp/x.so", "LD_PRELOAD sets the environment: refused for every user"),
]


def _render(kind: str, extra_flags: str, **values) -> list[str]:
    recipe = render(LaunchSettings(kind=kind, model=MODEL[kind], extra_flags=extra_flags, **values))
    return recipe.argv + [f"{k}={v}" for k, v in recipe.env.items()]


@pytest.mark.parametrize(("kind", "flags", "message"), REFUSALS)
def test_it_refuses_flags_that_touch_files_hosts_code_or_the_environment_saying_why(kind, flags, message):
    with pytest.raises(ValueError, match=r"^extra flags: ") as refused:
        _render(kind, flags)
    assert message in str(refused.value)


def test_it_refuses_any_other_flag_as_not_in_the_allowlist_listing_it():
    with pytest.raises(ValueError) as refused:
        _render("llama-server", "-ngl 99 --foo 1")
    text = str(refused.value)
    assert text.startswith("extra flags: --foo is not an allowed llama-server flag; allowed: -ngl, ")
    with pytest.raises(ValueError, match="OLLAMA_FOO is not an allowed Ollama setting; allowed: OLLAMA_"):
        _render("ollama", "OLLAMA_FOO=1")
    with pytest.raises(ValueError, match=r"serve is not NAME=value \(Ollama takes its settings as"):
        _render("ollama", "serve")
    with pytest.raises(ValueError, match=r"evil\.py is not a flag"):
        _render("vllm", "--enforce-eager evil.py")


@pytest.mark.parametrize(
    ("kind", "flags", "message"),
    [
        ("vllm", "--gpu-memory-utilization 1.5", "--gpu-memory-utilization '1.5': must be a number above 0"),
        ("vllm", "--gpu-memory-utilization=nan", "'nan': must be a number above 0, at most 1"),
        ("llama-server", "-fa maybe", "-fa 'maybe': must be one of on, off, auto"),
        ("llama-server", "-ngl --log-file", "-ngl '--log-file': must be a whole number from 0 to 10000"),
        ("llama-server", "-ngl", "-ngl needs a value: a whole number from 0 to 10000 or one of auto, all"),
        ("llama-server", "--jinja=yes", "--jinja takes no value"),
        ("sglang", "--tool-call-parser ../x", "--tool-call-parser '../x': must be a name"),
        ("ollama", "OLLAMA_KV_CACHE_TYPE=q2", "OLLAMA_KV_CACHE_TYPE 'q2': must be one of f16, q8_0, q4_0"),
        ("ollama", "OLLAMA_KEEP_ALIVE=forever", "OLLAMA_KEEP_ALIVE 'forever': must be a duration"),
    ],
)
def test_it_checks_each_allowed_flags_value(kind, flags, message):
    with pytest.raises(ValueError) as refused:
        _render(kind, flags)
    assert message in str(refused.value)


def test_it_passes_allowed_flags_with_valid_values_in_either_spelling():
    argv = _render("llama-server", "-ngl 99 --flash-attn=on --jinja --cache-reuse=256 --prio -1")
    expected = ["-ngl", "99", "--flash-attn", "on", "--jinja", "--cache-reuse", "256", "--prio", "-1"]
    assert argv[-9:] == expected
    argv = _render("vllm", "--gpu-memory-utilization=0.85 --dtype bfloat16 --enforce-eager")
    assert argv[-5:] == ["--gpu-memory-utilization", "0.85", "--dtype", "bfloat16", "--enforce-eager"]
    env = _render("ollama", "OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_KEEP_ALIVE=1h30m")
    assert "OLLAMA_KV_CACHE_TYPE=q8_0" in env and "OLLAMA_KEEP_ALIVE=1h30m" in env


def test_it_allows_more_only_through_the_machines_own_setting(monkeypatch):
    with pytest.raises(ValueError, match="--no-such-flag is not an allowed SGLang flag"):
        _render("sglang", "--no-such-flag 1")
    allowed = "sglang:--no-such-flag vllm:--trust-remote-code:bare,ollama:MY_VAR"
    monkeypatch.setenv("SPARKDASH_ALLOW_FLAGS", allowed)
    assert _render("sglang", "--no-such-flag 1")[-2:] == ["--no-such-flag", "1"]
    assert _render("vllm", "--trust-remote-code")[-1] == "--trust-remote-code"
    assert "MY_VAR=x" in _render("ollama", "MY_VAR=x")
    with pytest.raises(ValueError, match="--no-such-flag '--host': must be"):
        _render("sglang", "--no-such-flag --host")  # an addition's value is never a flag
    with pytest.raises(ValueError, match="--no-such-flag is not an allowed llama-server flag"):
        _render("llama-server", "--no-such-flag 1")  # per kind


def test_it_checks_a_simulator_engines_flags_against_the_simulators_allowlist():
    sim = LaunchSettings(kind="llama-server", model="demo", simulator=True, extra_flags="--decode-tps 300")
    recipe = render(sim)
    assert "--decode-tps" not in recipe.argv and any("the SparkDash simulator's" in n for n in recipe.notes)
    for flags in ("--settings evil", "--pythonpath /tmp", "--log-file /tmp/x", "--port 1", "-ngl 99"):
        with pytest.raises(ValueError, match=r"^extra flags: "):
            render(sim.with_(extra_flags=flags))
        assert str(launch_refusal(sim.with_(extra_flags=flags))).startswith("extra flags: ")


def test_it_allows_only_flags_each_engine_documents():
    for spec in kinds.REGISTRY.values():
        table = spec.flag_table()
        lines = (DATA / REFERENCE[spec.name]).read_text().splitlines()
        unknown = set(table.names()) - {line.strip() for line in lines if not line.startswith("#")}
        assert table.flags and not unknown, f"{spec.name}: {unknown}"
        assert not set(table.names()) & set(REFUSED), spec.name  # a refusal is never also allowed


def test_it_allows_the_simulator_only_options_simengine_takes():
    parser = load_command_class("engines", "simengine").create_parser("manage.py", "simengine")
    options = {option: action for action in parser._actions for option in action.option_strings}
    table = simulator_flags.ALLOWED_FLAGS
    ours = {"--port", "--host", "--log-file", "--settings", "--pythonpath"}
    assert set(table.names()) <= set(options) - ours
    assert simulator_flags.FAULTS == simulator.FAULTS and simulator_flags.REASONING_STYLES == REASONING_STYLES
    for flag in table.flags:  # bare in the table exactly when simengine's option takes no value
        assert (flag.value is None) == (options[flag.names[0]].nargs == 0), flag.names


def test_it_keeps_the_tests_and_demos_engine_flags_allowed():
    from tests.real_engine import SGLANG_CPU_FLAGS, VLLM_CPU_FLAGS

    assert checked(kinds.get("vllm").flag_table(), VLLM_CPU_FLAGS) == shlex.split(VLLM_CPU_FLAGS)
    assert checked(kinds.get("sglang").flag_table(), SGLANG_CPU_FLAGS) == shlex.split(SGLANG_CPU_FLAGS)


def test_it_documents_exactly_the_tables_flags_in_the_readme():
    text = README.read_text()
    found = re.search(r"<!-- launch-flags:start -->\n(.*)<!-- launch-flags:end -->", text, re.DOTALL)
    assert found, "README: the launch-flags section is missing"
    assert found.group(1) == allowlist_markdown(), "README: paste `python -m engines.recipes.checks`"
