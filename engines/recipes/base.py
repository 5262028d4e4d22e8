"""The data a launch recipe is made of, and the helpers every engine's renderer shares.

No Django here: settings come in as a plain :class:`LaunchSettings`, and recipes go out as a
frozen :class:`Recipe` (argv, environment, files, API calls, notes).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from engines import kinds
from engines.recipes.field_words import field_words
from engines.recipes.flags import checked, split_extra_flags
from measure.words import Words, gettext_noop

__all__ = [
    "Builder",
    "LaunchSettings",
    "Recipe",
    "split_extra_flags",
]

HEREDOC_END = "SPARKDASH_EOF"


@dataclass(frozen=True)
class Recipe:
    """What starts one engine with one config's settings.

    :param kind: the engine kind (a name in ``engines.kinds``).
    :param argv: the command; ``argv[0]`` is the program.
    :param env: environment variables to set before running it.
    :param files: file name -> content, written before the command runs (e.g. a Modelfile).
    :param api_calls: HTTP calls to make once the server answers, as
        ``{"method", "path", "json"}`` dicts (paths are relative to ``base_url``).
    :param notes: things a person must know (settings not rendered, restarts needed).
    :param base_url: where the server listens, for the API calls.
    """

    kind: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    api_calls: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    base_url: str = ""

    def command_line(self) -> str:
        """The command alone, quoted so that ``shlex.split`` gives back ``argv``."""
        return shlex.join(self.argv)

    def shell(self) -> str:
        """A copyable shell snippet: env exports, files as heredocs, the command, then API calls."""
        lines = [f"export {name}={shlex.quote(value)}" for name, value in self.env.items()]
        for name, content in self.files.items():
            end = HEREDOC_END
            while end in content.splitlines():
                end += "_"
            lines += [f"cat > {shlex.quote(name)} <<'{end}'", *content.splitlines(), end]
        lines.append(self.command_line())
        if self.api_calls:
            lines.append("# then, once the server answers (from another shell):")
            lines += [f"# {_curl(self.base_url, call)}" for call in self.api_calls]
        return "\n".join(lines) + "\n"


def _curl(base_url: str, call: dict) -> str:
    body = json.dumps(call.get("json", {}), separators=(",", ":"))
    url = base_url.rstrip("/") + call["path"]
    return shlex.join(["curl", "-sS", "-X", call.get("method", "POST"), url, "-d", body])


@dataclass(frozen=True)
class LaunchSettings:
    """Everything a recipe is rendered from; an empty string or None means "engine default".

    :param kind: the engine kind, a name in ``engines.kinds``.
    :param model: model path or name (a GGUF path for llama-server, a tag for Ollama, a HF id or
        folder for vLLM and SGLang).
    :param binary: the program; empty means the kind's ``default_binary``.
    :param host: the address to listen on.
    :param port: the port to listen on; None means the kind's ``default_port``.
    :param lookahead: draft tokens per verification; 0 is no drafting on every engine kind (no
        speculative flags for llama-server, vLLM and SGLang; draft_num_predict 0 in Ollama's alias).
    :param thinking: "" (the engine's default), "off", "on" or "budget" (``thinking_budget`` tokens).
    :param reasoning_parser: vLLM/SGLang's; empty: guessed from the model name when thinking is set.
    :param extra_flags: typed as on a command line; each flag must be in the kind's allowlist
        (``engines.recipes.flags``), and only the checked tokens are appended.
    :param metrics: turn on the Prometheus endpoint where the engine needs a flag for it.
    :param simulator: the SparkDash simulator stands in for the engine: the extra flags are its own.
    """

    kind: str
    model: str
    binary: str = ""
    host: str = "127.0.0.1"
    port: int | None = None
    quantization: str = ""
    speculative_method: str = ""
    draft_model: str = ""
    lookahead: int = 0
    draft_n_min: int | None = None
    draft_p_min: float | None = None
    context_length: int | None = None
    parallel: int | None = None
    threads: int | None = None
    cache_ram_mib: int | None = None
    kv_cache_dtype: str = ""
    prefix_caching: bool | None = None
    max_num_batched_tokens: int | None = None
    attention_backend: str = ""
    moe_backend: str = ""
    thinking: str = ""
    thinking_budget: int | None = None
    reasoning_parser: str = ""
    extra_flags: str = ""
    metrics: bool = True
    simulator: bool = False

    def __post_init__(self) -> None:
        spec = kinds.find(self.kind)
        if spec is None:
            raise ValueError(
                Words(
                    gettext_noop("kind: %(kind)s is not one of %(known)s"),
                    kind=repr(self.kind),
                    known=", ".join(kinds.names()),
                )
            )
        if not self.model:
            raise ValueError(gettext_noop("model: empty"))
        if not self.binary:
            object.__setattr__(self, "binary", spec.default_binary)
        if self.port is None:
            object.__setattr__(self, "port", spec.default_port)

    @classmethod
    def from_base_url(cls, kind: str, base_url: str, **values: Any) -> LaunchSettings:
        """Settings whose host and port come from an engine's base URL (``http://host:port``)."""
        parts = urlsplit(base_url if "://" in base_url else f"http://{base_url}")
        host = parts.hostname or "127.0.0.1"
        return cls(kind=kind, host=host, port=parts.port, **values)

    @property
    def host_port(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def with_(self, **changes: Any) -> LaunchSettings:
        return replace(self, **changes)




class Builder:
    """A recipe under construction: renderers add flags, env, files and notes, then call ``build``."""

    def __init__(self, settings: LaunchSettings, argv: list[str]) -> None:
        self.settings = settings
        self.argv = list(argv)
        self.env: dict[str, str] = {}
        self.files: dict[str, str] = {}
        self.api_calls: list[dict] = []
        self.notes: list[str] = []

    def flag(self, name: str, value: object = True) -> None:
        """Add ``name value``; None and False add nothing, True adds the bare flag."""
        if value is None or value is False or value == "":
            return
        self.argv.append(name)
        if value is not True:
            self.argv.append(str(value))

    def unused(self, field_name: str, why: str) -> None:
        """Note that a set field is not rendered for this engine, and why."""
        value = getattr(self.settings, field_name)
        if value not in (None, "", 0, False):
            self.notes.append(
                Words(
                    gettext_noop("%(field)s (%(value)s) is not rendered: %(why)s"),
                    field=field_words(field_name),
                    value=value,
                    why=Words(why),
                )
            )

    def build(self, base_url: str = "") -> Recipe:
        """The recipe, with the extra flags the kind's allowlist lets through (ValueError otherwise)."""
        extra = checked(kinds.get(self.settings.kind).flag_table(), self.settings.extra_flags)
        return Recipe(
            kind=self.settings.kind,
            argv=self.argv + extra,
            env=self.env,
            files=self.files,
            api_calls=self.api_calls,
            notes=self.notes,
            base_url=base_url or f"http://{self.settings.host_port}",
        )
