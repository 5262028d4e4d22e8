"""The engine-kind registry: a new kind is its registry entry, and nothing else names a kind."""
from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from engines import counters_text, kinds
from engines.clients import Chunk, EngineClient, EngineFigures, GenerationRequest, client_for
from engines.clients.base import now
from engines.clients.openai import OpenAIClient
from engines.models import Engine
from engines.recipes import LaunchSettings, Recipe, render
from runs.core.jobs.concurrency.loop import ConcurrencyJob, run_concurrency
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
URL = "http://toy.invalid:9000"
# Besides engines/kinds.py, the modules that may name a kind: its own client, recipe and log parser.
OWN_MODULES = {
    "ollama": {"engines/clients/ollama.py", "engines/recipes/ollama.py"},
    "llama-server": {"engines/recipes/llama_server.py", "engines/logparse.py"},
    "vllm": {"engines/recipes/vllm.py"},
    "sglang": {"engines/recipes/sglang.py", "engines/clients/sglang.py"},
}


class ToyClient(EngineClient):
    """A client for an API no real engine speaks: every answer is `max_tokens` tokens of "x"."""

    kind = "toy-api"

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.requests = []

    async def stream(self, request):
        self.requests.append(request)
        yield Chunk(now(), "x" * request.max_tokens)
        yield EngineFigures(output_tokens=request.max_tokens, prompt_tokens=10, finish_reason="length")

    async def version(self):
        return "toy 1"

    async def model_info(self, model):
        return {"id": model}


def toy_client(kind, base_url, api_key, timeout, transport):
    return ToyClient(base_url, api_key, timeout, transport)


def render_toy(settings: LaunchSettings) -> Recipe:
    return Recipe(kind=settings.kind, argv=[settings.binary, "--port", str(settings.port), settings.model])


TOY = kinds.EngineKind(
    name="toy", label="Toy", client=f"{__name__}:toy_client", render_with=f"{__name__}:render_toy",
    default_binary="toyd",
    default_port=9000, log_parser=None, counters_prefix=None, lookahead_by="alias",
    honours_ignore_eos=False, tokenizer="calibrated", needs_num_ctx=False, cache_fix="restart the toy",
)  # fmt: skip


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(kinds.REGISTRY, TOY.name, TOY)
    return TOY


def test_it_makes_a_new_kinds_client_from_its_entry_alone(toy):
    client = client_for("toy", URL, "key")
    assert isinstance(client, ToyClient) and client.engine_kind == "toy"
    assert client.http.headers["Authorization"] == "Bearer key"


def test_it_renders_a_new_kinds_recipe_with_its_defaults(toy):
    recipe = render(LaunchSettings(kind="toy", model="m"))
    assert recipe.argv == ["toyd", "--port", "9000", "m"]
    with pytest.raises(ValueError, match=r"^kind: 'tgi' is not one of .*toy"):
        LaunchSettings(kind="tgi", model="m")


async def test_it_applies_a_new_kinds_capabilities_in_the_measurement_core(toy, monkeypatch):
    job = ConcurrencyJob("m", levels=(1, 2), answer_tokens=4, warmup=0)
    async with client_for("toy", URL) as client:
        await run_concurrency(client, job, CollectingProgress())
    assert [r.extra for r in client.requests] == [{}] * 3  # the toy does not honour ignore_eos
    monkeypatch.setitem(kinds.REGISTRY, "toy", dataclasses.replace(toy, honours_ignore_eos=True))
    async with client_for("toy", URL) as client:
        await run_concurrency(client, job, CollectingProgress())
    assert [r.extra for r in client.requests] == [{"ignore_eos": True}] * 3


async def test_it_makes_an_openai_compatible_kind_a_flavour_by_its_entry(monkeypatch):
    tgi = dataclasses.replace(
        TOY, name="tgi", client=kinds.OPENAI_COMPATIBLE, version_paths=(("/info", "version"),),
        chat_fields={"decoder_input_details": False},
    )  # fmt: skip
    monkeypatch.setitem(kinds.REGISTRY, "tgi", tgi)
    info = httpx.MockTransport(lambda request: httpx.Response(200, json={"version": "3.1"}))
    async with client_for("tgi", URL, transport=info) as client:
        assert isinstance(client, OpenAIClient) and client.flavour == "tgi"
        assert await client.version() == "3.1"
    body = client.chat_body(GenerationRequest("m", [{"role": "user", "content": "hi"}]))
    assert body["decoder_input_details"] is False and "cache_prompt" not in body


def test_it_refuses_a_non_openai_kind_as_a_flavour(toy):
    with pytest.raises(ValueError, match="unknown OpenAI-compatible engine"):
        OpenAIClient(URL, flavour="toy")


def test_it_reads_spec_counters_under_each_kinds_own_prefix():
    assert kinds.get("llama-server").counters_prefix == counters_text.LLAMACPP
    assert kinds.get("vllm").counters_prefix == counters_text.VLLM
    text = "vllm:spec_decode_num_drafts_total 4\nvllm:spec_decode_num_draft_tokens_total 12\n"
    text += "vllm:spec_decode_num_accepted_tokens_total 9\n"
    delta = counters_text.spec_decode_delta({}, text, kinds.get("vllm").counters_prefix)
    assert (delta.drafts, delta.draft_tokens, delta.accepted) == (4, 12, 9)
    assert counters_text.spec_decode_delta({}, text, kinds.get("llama-server").counters_prefix) is None


def test_it_rejects_an_unknown_kind():
    assert kinds.find("tgi") is None
    with pytest.raises(ValueError, match="unknown engine kind 'tgi'"):
        kinds.get("tgi")


def test_it_derives_the_engine_kind_choices_from_the_registry():
    field = Engine._meta.get_field("kind")
    assert list(field.choices) == kinds.choices()
    assert Engine(kind="ollama").get_kind_display() == "Ollama"


def test_it_keeps_every_kind_spec_complete():
    for spec in kinds.REGISTRY.values():
        assert render(LaunchSettings(kind=spec.name, model="m")).kind == spec.name
        assert type(client_for(spec.name, URL)).__name__ in ("OllamaClient", "OpenAIClient", "SGLangClient")
        assert spec.lookahead_by in ("relaunch", "alias") and spec.tokenizer in ("tokenize", "calibrated")
        assert spec.cache_fix and 0 < spec.default_port < 65536 and spec.default_binary


def test_it_names_kinds_only_in_the_registry_and_their_own_modules():
    """A kind's name as a string, or `Kind.<NAME>`, anywhere else in engines/ or runs/ fails here."""
    members = {name.upper().replace("-", "_"): name for name in kinds.names()}
    found = []
    for path in sorted((ROOT / "engines").rglob("*.py")) + sorted((ROOT / "runs").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "/migrations/" in rel or rel == "engines/kinds.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            name = _kind_named(node, members)
            if name and rel not in OWN_MODULES[name]:
                found.append(f"{rel}:{node.lineno}: {name}")
    assert found == [], "read engines.kinds instead of naming a kind:\n" + "\n".join(found)


def _kind_named(node: ast.AST, members: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and node.value in members.values():
        return node.value
    if isinstance(node, ast.Attribute) and node.attr in members:
        owner = node.value
        if (isinstance(owner, ast.Attribute) and owner.attr == "Kind") or (
            isinstance(owner, ast.Name) and owner.id == "Kind"
        ):
            return members[node.attr]
    return None


def test_it_imports_the_registry_and_the_core_without_django():
    code = (
        "import sys, engines.kinds, runs.core.jobs.concurrency.loop, runs.core.jobs.agent_table.chat;"
        "sys.exit(sorted(m for m in sys.modules if m.split('.')[0] == 'django') or 0)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
