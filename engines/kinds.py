"""The engine kinds SparkDash measures: one `EngineKind` spec per kind, the one place a kind is named.

Adding an engine kind ("tgi", say):

1. Its client: a flavour of the OpenAI-compatible client (``client=OPENAI_COMPATIBLE``) when it
   speaks /v1/chat/completions, else a new ``EngineClient`` subclass in ``engines/clients/`` and a
   factory for it there, shaped like ``engines.clients.ollama_native``, named by "module:name".
2. Its launch recipe: ``engines/recipes/tgi.py`` with ``render_tgi(settings) -> Recipe``, built with
   ``engines.recipes.base.Builder``, and its ``ALLOWED_FLAGS`` (the extra flags a config may add,
   ``engines.recipes.flags``; none allowed until it has one).
3. Its entry in :data:`REGISTRY` below: label, client, renderer ("module:name"), default binary and port, log
   parser, Prometheus prefix, capabilities, cache-fix text, version probe paths.
4. A migration: ``Engine.kind``'s choices come from here (``makemigrations`` writes it).
5. Its tests (client wire format, recipe); nothing in runs/ names a kind, it reads the spec.

Django-free (the models import this module, not the other way round), so ``runs.core`` may use it.
Clients and recipes read this registry; it names their factories by "module:name" and imports them
when first used, so no import runs the other way.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from engines.logparse import LogEvent, parse_line
from measure.words import gettext_noop

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OLLAMA_NATIVE", "OPENAI_COMPATIBLE", "REGISTRY", "SGLANG_NATIVE",
    "EngineKind", "choices", "find", "get", "names", "resolve",
]  # fmt: skip

OPENAI_COMPATIBLE = "engines.clients:openai_compatible"
OLLAMA_NATIVE = "engines.clients:ollama_native"
SGLANG_NATIVE = "engines.clients:sglang_native"
EMPTY_FLAGS = "engines.recipes.flags:FlagTable"  # a kind that names no allowlist allows no extra flag
# The clients, recipes and flag tables this module names by import string are typed Any here: it
# imports none of them, not even for type hints (they import it). Their callers say the types:
# engines.clients.client_for (EngineClient), engines.recipes.render (Recipe), FlagTable's users.
ClientFactory = Callable[["EngineKind", str, str, float, "httpx.AsyncBaseTransport | None"], Any]


@dataclass(frozen=True)
class EngineKind:
    """What SparkDash knows about one kind of engine.

    :param name: the stored value of ``Engine.kind`` (``"llama-server"``).
    :param label: how pages name it.
    :param client: ``"module:factory"`` of its API client: ``factory(kind, base_url, api_key,
        timeout, transport)`` (``OPENAI_COMPATIBLE`` for a flavour of the OpenAI-compatible one).
    :param render_with: ``"module:function"`` of its launch recipe: ``function(settings)``
        (``ValueError`` names a bad field).
    :param default_binary: the program a recipe runs when the engine names none.
    :param default_port: the port a recipe listens on when the base URL names none.
    :param log_parser: turns one log line into a ``LogEvent`` (or None); None: its log is only kept.
    :param counters_prefix: the prefix of its speculative-decoding counters in /metrics
        (``counters_text`` names the rest); None: it exports none.
    :param lookahead_by: how an external engine's draft length changes for a lookahead sweep:
        ``"relaunch"`` (only by restarting it, so it must be managed) or ``"alias"`` (a model alias
        per length, created through its API).
    :param honours_ignore_eos: whether ``ignore_eos`` in a request makes it answer the full length.
    :param tokenizer: how the needle job sizes prompts: ``"tokenize"`` (its /tokenize endpoint) or
        ``"calibrated"`` (tokens per character measured from its prompt counts).
    :param needs_num_ctx: whether a long prompt needs an explicit ``num_ctx`` option, without which
        it is cut to the engine's default context.
    :param cache_fix: what to change when it silently drops prompts from its prefix cache.
    :param version_paths: where an OpenAI-compatible engine tells its version: ``(path, key)``
        pairs tried in order.
    :param chat_fields: fields added to every OpenAI-compatible chat body.
    :param figures_from_counters: whether its replies carry no timings, so a request's engine-side
        figures (decode and prefill time, time to first token, drafts) come from /metrics deltas.
    :param startup_gauge: the /metrics gauge (labelled ``phase``) in which it tells how long each
        part of its start-up took; None: it tells none.
    :param allowed_flags: ``"module:name"`` of its extra flags' allowlist (a ``FlagTable``, beside its
        recipe); empty: no extra flag is allowed.
    :param methods: ``"module:name"`` of the speculative-method names its recipe takes (what the
        config form suggests); empty: none.
    :param backend_names: what other tools' result files name its protocol as their backend
        (``vllm bench --backend vllm``, ``llama.cpp``): a file imported onto a config of another kind
        is a mismatch (runs.core.imports.match).
    """

    name: str
    label: str
    client: str
    render_with: str
    default_binary: str
    default_port: int
    log_parser: Callable[[str], LogEvent | None] | None
    counters_prefix: str | None
    lookahead_by: Literal["relaunch", "alias"]
    honours_ignore_eos: bool
    tokenizer: Literal["tokenize", "calibrated"]
    needs_num_ctx: bool
    cache_fix: str
    version_paths: tuple[tuple[str, str], ...] = ()
    chat_fields: Mapping[str, Any] = field(default_factory=dict)
    figures_from_counters: bool = False
    startup_gauge: str | None = None
    allowed_flags: str = ""
    methods: str = ""
    backend_names: tuple[str, ...] = ()

    def method_names(self) -> list[str]:
        """The speculative-method names its launch recipe takes, for the config form's suggestions."""
        return list(resolve(self.methods)) if self.methods else []

    def make_client(
        self, base_url: str, api_key: str, timeout: float, transport: httpx.AsyncBaseTransport | None
    ) -> Any:
        """Its API client, an ``EngineClient`` (see engines.clients.client_for)."""
        factory: ClientFactory = resolve(self.client)
        return factory(self, base_url, api_key, timeout, transport)

    def render(self, settings: Any) -> Any:
        """Its launch ``Recipe`` for these ``LaunchSettings``; ValueError names a field it cannot run."""
        return resolve(self.render_with)(settings)

    def flag_table(self) -> Any:
        """The extra flags a config of this kind may add, a ``FlagTable`` (an empty one when it names
        none)."""
        if self.allowed_flags:
            return resolve(self.allowed_flags)
        return resolve(EMPTY_FLAGS)(self.name, self.label, [])


def resolve(path: str) -> Any:
    """The object a "module:name" import string names, imported when first asked for.

    The engine kinds name their parts this way: an engine kind's client factory and renderer here
    (they live in engines.clients and engines.recipes, which read this registry). Job kinds are
    found by their folders instead (runs.core.registry).
    """
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


# The order is that of Engine.kind's choices in the migrations.
REGISTRY: dict[str, EngineKind] = {
    spec.name: spec
    for spec in (
        EngineKind(
            name="ollama", label="Ollama", client=OLLAMA_NATIVE,
            render_with="engines.recipes.ollama:render_ollama",
            allowed_flags="engines.recipes.ollama:ALLOWED_FLAGS", methods="engines.recipes.ollama:METHODS",
            default_binary="ollama", default_port=11434,
            log_parser=parse_line,  # its runner is llama.cpp's server, whose lines it passes on
            counters_prefix=None, lookahead_by="alias", honours_ignore_eos=False,
            tokenizer="calibrated", needs_num_ctx=True, backend_names=("ollama",),
            cache_fix=gettext_noop(
                "set LLAMA_ARG_CACHE_RAM (MiB) in the ollama serve environment and restart it"
            ),
        ),
        EngineKind(
            name="llama-server", label="llama-server", client=OPENAI_COMPATIBLE,
            render_with="engines.recipes.llama_server:render_llama_server",
            allowed_flags="engines.recipes.llama_server:ALLOWED_FLAGS",
            methods="engines.recipes.llama_server:SPEC_TYPES",
            default_binary="llama-server", default_port=8080, log_parser=parse_line,
            counters_prefix="llamacpp:", lookahead_by="relaunch", honours_ignore_eos=True,
            tokenizer="tokenize", needs_num_ctx=False,
            cache_fix=gettext_noop("a larger --cache-ram N (MiB; -1 = no limit), or LLAMA_ARG_CACHE_RAM"),
            version_paths=(("/props", "build_info"),),
            chat_fields={"cache_prompt": True}, backend_names=("llama-server", "llama.cpp", "llamacpp"),
        ),
        EngineKind(
            name="sglang", label="SGLang", client=SGLANG_NATIVE,
            render_with="engines.recipes.sglang:render_sglang",
            allowed_flags="engines.recipes.sglang:ALLOWED_FLAGS", methods="engines.recipes.sglang:ALGORITHMS",
            default_binary="python3", default_port=30000, log_parser=None,
            counters_prefix=None, lookahead_by="relaunch", honours_ignore_eos=True,
            tokenizer="tokenize", needs_num_ctx=False,
            cache_fix=gettext_noop(
                "give the radix cache more room (--mem-fraction-static) or check --disable-radix-cache is off"
            ),
            # SGLang renamed its endpoint.
            version_paths=(("/server_info", "version"), ("/get_server_info", "version")),
            # Asks its /v1 stream for the request's acceptance (its native /generate has it anyway).
            chat_fields={"return_spec_tokens_details": True},
            startup_gauge="sglang:startup_time_seconds", backend_names=("sglang", "sglang-native"),
        ),
        EngineKind(
            name="vllm", label="vLLM", client=OPENAI_COMPATIBLE,
            render_with="engines.recipes.vllm:render_vllm",
            allowed_flags="engines.recipes.vllm:ALLOWED_FLAGS", methods="engines.recipes.vllm:METHOD_NAMES",
            default_binary="vllm", default_port=8000, log_parser=None,
            counters_prefix="vllm:", lookahead_by="relaunch", honours_ignore_eos=True,
            tokenizer="tokenize", needs_num_ctx=False,
            cache_fix=gettext_noop(
                "more KV-cache room (--gpu-memory-utilization, --max-model-len), prefix caching on"
            ),
            version_paths=(("/version", "version"),), figures_from_counters=True,
            backend_names=("vllm", "vllm-chat"),
        ),
    )
}  # fmt: skip


def find(name: str) -> EngineKind | None:
    """The spec of the kind called `name`, or None when no kind is."""
    return REGISTRY.get(name)


def get(name: str) -> EngineKind:
    """The spec of the kind called `name`.

    :raises ValueError: "unknown engine kind ..." when no kind is called that.
    """
    spec = REGISTRY.get(name)
    if spec is None:
        raise ValueError(f"unknown engine kind {name!r}")
    return spec


def names() -> tuple[str, ...]:
    """Every kind's name, in registry order."""
    return tuple(REGISTRY)


def choices() -> list[tuple[str, str]]:
    """``(name, label)`` for every kind: the choices of ``Engine.kind``."""
    return [(spec.name, spec.label) for spec in REGISTRY.values()]
