"""A config's extra flags are data: each engine kind's allowlist, its value checks, and the refused flags.

Each kind's recipe module keeps its own ``ALLOWED_FLAGS`` (a :class:`FlagTable`), beside the flags
it renders itself; Ollama's is a table of ``NAME=value`` environment variables, since ``ollama
serve`` takes no flags. :func:`checked` splits a config's ``extra_flags`` and gives back the argv
tokens (or environment) a launch may use, raising ``ValueError`` naming the first flag it refuses.
A flag that reads or writes files, binds a host or port, loads code, sets the environment or names
the model is refused for every user, with the reason (:data:`REFUSED`); anything else outside the
allowlist is refused as such. Only this machine's own ``SPARKDASH_ALLOW_FLAGS`` (the environment of
the web server or worker that checks, never the database) can allow more (:func:`local_additions`).
No Django here.
"""
from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from measure.words import Words, gettext_noop

__all__ = [
    "ALLOW_ENV", "REFUSED", "Choice", "Either", "Flag", "FlagTable", "Int", "Name", "Num", "Pattern",
    "checked", "local_additions", "split_extra_flags",
]  # fmt: skip

ALLOW_ENV = "SPARKDASH_ALLOW_FLAGS"
ENV_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:,+-]*$")  # a value of letters, digits and _ . : , + -
NAME_MAX = 200


class Check:
    """A value check: ``problem`` says what is wrong with a value (None: fine), ``describe`` what it takes."""

    def problem(self, value: str) -> str | None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Int(Check):
    """A whole number from ``low`` to ``high``."""

    low: int
    high: int

    def problem(self, value: str) -> str | None:
        if not re.fullmatch(r"-?\d{1,12}", value) or not self.low <= int(value) <= self.high:
            return self.describe()
        return None

    def describe(self) -> str:
        return Words(gettext_noop("a whole number from %(low)s to %(high)s"), low=self.low, high=self.high)


@dataclass(frozen=True)
class Num(Check):
    """A number from ``low`` to ``high``; ``above``: strictly above ``low``."""

    low: float
    high: float
    above: bool = False

    def problem(self, value: str) -> str | None:
        try:
            number = float(value) if re.fullmatch(r"-?[\d.]{1,20}(e-?\d{1,3})?", value) else math.nan
        except ValueError:
            number = math.nan
        low_ok = number > self.low if self.above else number >= self.low
        return None if low_ok and number <= self.high else self.describe()

    def describe(self) -> str:
        if self.above:
            text = gettext_noop("a number above %(low)g, at most %(high)g")
            return Words(text, low=self.low, high=self.high)
        return Words(gettext_noop("a number from %(low)g to %(high)g"), low=self.low, high=self.high)


@dataclass(frozen=True)
class Choice(Check):
    """One of a few words."""

    options: tuple[str, ...]

    def problem(self, value: str) -> str | None:
        return None if value in self.options else self.describe()

    def describe(self) -> str:
        return Words(gettext_noop("one of %(options)s"), options=", ".join(self.options))


@dataclass(frozen=True)
class Name(Check):
    """A name: letters, digits and ``_ . : , + -``, not starting with ``-`` and no path (a device list)."""

    def problem(self, value: str) -> str | None:
        ok = NAME.fullmatch(value) and len(value) <= NAME_MAX and ".." not in value
        return None if ok else self.describe()

    def describe(self) -> str:
        return gettext_noop("a name of letters, digits and _ . : , + - (no path)")


@dataclass(frozen=True)
class Pattern(Check):
    """A value the regular expression ``regex`` matches whole, described as ``what``."""

    regex: str
    what: str

    def problem(self, value: str) -> str | None:
        return None if len(value) <= NAME_MAX and re.fullmatch(self.regex, value) else self.describe()

    def describe(self) -> str:
        return self.what


@dataclass(frozen=True)
class Either(Check):
    """A value any of ``checks`` accepts."""

    checks: tuple[Check, ...]

    def problem(self, value: str) -> str | None:
        fine = any(check.problem(value) is None for check in self.checks)
        return None if fine else self.describe()

    def describe(self) -> str:
        return Words.joined(gettext_noop(" or "), [check.describe() for check in self.checks])


@dataclass(frozen=True)
class Flag:
    """One allowed flag: its spellings (``-ngl``, ``--n-gpu-layers``), its value check (None: it
    takes no value) and what it does, for the README."""

    names: tuple[str, ...]
    value: Check | None
    what: str = ""


class FlagTable:
    """One kind's allowed extra flags, by every spelling; ``env``: ``NAME=value`` assignments instead.

    :param kind: the engine kind's name (or "simulator"), as ``SPARKDASH_ALLOW_FLAGS`` names it.
    :param label: how messages name it.
    """

    def __init__(self, kind: str, label: str, flags: Iterable[Flag], env: bool = False) -> None:
        self.kind, self.label, self.env, self.flags = kind, label, env, tuple(flags)
        self.by_name: dict[str, Flag] = {name: flag for flag in self.flags for name in flag.names}

    def names(self) -> list[str]:
        """Every allowed spelling, in table order."""
        return list(self.by_name)

    def with_(self, extra: Iterable[Flag]) -> FlagTable:
        """This table plus ``extra`` (a machine's local additions win over a refusal)."""
        return FlagTable(self.kind, self.label, [*self.flags, *extra], env=self.env)


# Refused for every user, whatever the kind, with the reason the error gives.
READS = gettext_noop("reads a file")
WRITES = gettext_noop("writes a file")
BINDS = gettext_noop("binds a host or port (the engine's base URL sets them)")
CODE = gettext_noop("loads code")
ENVIRONMENT = gettext_noop("sets the environment")
MODEL = gettext_noop("names a model or download (the model and draft model fields do)")
SECRET = gettext_noop("sets a credential")
REFUSED: Mapping[str, str] = {
    **dict.fromkeys((
        "--path", "--chat-template-file", "--grammar-file", "--json-schema-file", "-jf", "--file", "-f",
        "--lora", "--lora-scaled", "--control-vector", "--control-vector-scaled", "--mmproj", "-mm",
        "--lookup-cache-static", "-lcs", "--lookup-cache-dynamic", "-lcd", "--models-dir", "--models-preset",
        "--media-path", "--ui-config-file", "--webui-config-file", "--mcp-servers-config", "--config",
        "--allowed-local-media-path", "--chat-template", "--tokenizer", "--tokenizer-path",
        "--hf-config-path", "--generation-config", "--lora-modules", "--lora-paths", "--ssl-keyfile",
        "--ssl-certfile", "--ssl-ca-certs", "--ssl-key-file", "--ssl-cert-file", "--api-key-file",
        "--log-config-file", "--quantization-param-path", "--ds-channel-config-path",
        "--debug-tensor-dump-input-file", "--pdmux-config-path", "--modelopt-checkpoint-restore-path",
        "--mm-encoder-fp8-scale-path", "--speculative-token-map", "--video-ffmpeg-dir",
    ), READS),
    **dict.fromkeys((
        "--log-file", "--slot-save-path", "--log-prompts-dir", "--download-dir", "--crash-dump-folder",
        "--debug-tensor-dump-output-folder", "--file-storage-path", "--modelopt-checkpoint-save-path",
        "--mm-encoder-fp8-scale-save-path",
    ), WRITES),
    **dict.fromkeys((
        "--host", "--port", "--uds", "--reuse-port", "--no-host", "--nccl-port", "--dist-init-addr",
        "--nccl-init-addr", "--data-parallel-address", "-dpa", "--data-parallel-rpc-port", "-dpp",
        "--master-addr", "--master-port", "--disaggregation-bootstrap-port", "--rpc", "--tool-server",
        "--otlp-traces-endpoint", "--oltp-traces-endpoint", "--api-server-count", "-asc", "--grpc",
        "--allowed-origins", "--cors-origins", "--root-path",
    ), BINDS),
    **dict.fromkeys((
        "--trust-remote-code", "--pythonpath", "--settings", "--worker-cls", "--worker-extension-cls",
        "--middleware", "--tool-parser-plugin", "--reasoning-parser-plugin", "--logits-processors",
        "--io-processor-plugin", "--scheduler-cls", "--enable-custom-logit-processor", "--forward-hooks",
        "--custom-weight-loader", "--load-format", "--model-loader-extra-config", "--hf-overrides",
        "--json-model-override-args", "--trust-request-chat-template", "--code-revision", "--model-impl",
        "--tools", "--mcp-servers-json", "--agent",
    ), CODE),
    **dict.fromkeys(("--env",), ENVIRONMENT),
    **dict.fromkeys((
        "-m", "--model", "--model-path", "-md", "--model-draft", "--spec-draft-model", "-hf", "-hfr",
        "--hf-repo", "-hfd", "-hfrd", "--hf-repo-draft", "-hff", "--hf-file", "--spec-draft-hf", "-mu",
        "--model-url", "--mmproj-url", "-mmu", "-dr", "--docker-repo", "--speculative-draft-model-path",
        "--speculative-draft-model", "--speculative-config", "-sc", "--revision", "--tokenizer-revision",
        "--speculative-draft-model-revision",
    ), MODEL),
    **dict.fromkeys(("--api-key", "--hf-token", "-hft"), SECRET),
    # Environment variables: what a process loads, where it looks and where it listens.
    **dict.fromkeys((
        "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
        "PYTHONUSERBASE", "DJANGO_SETTINGS_MODULE", "OLLAMA_LLM_LIBRARY", "HOME", "BASH_ENV", "ENV",
        "NODE_OPTIONS", "PERL5OPT", "GCONV_PATH",
    ), CODE),
    **dict.fromkeys(("OLLAMA_MODELS", "OLLAMA_TMPDIR", "OLLAMA_RUNNERS_DIR", "TMPDIR"), READS),
    **dict.fromkeys(("OLLAMA_HOST", "OLLAMA_ORIGINS", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"), BINDS),
}


def local_additions(kind: str, environ: Mapping[str, str] | None = None) -> list[Flag]:
    """The flags this machine's ``SPARKDASH_ALLOW_FLAGS`` allows ``kind`` beyond its table.

    Entries are separated by spaces or commas: ``KIND:FLAG`` (it takes one value that does not start
    with ``-``, or a number), ``KIND:FLAG:bare`` (no value); for Ollama ``ollama:NAME`` allows the
    environment variable NAME. ``KIND`` is an engine kind or ``simulator``.
    """
    text = (os.environ if environ is None else environ).get(ALLOW_ENV, "")
    added = []
    for entry in text.replace(",", " ").split():
        entry_kind, _, rest = entry.partition(":")
        name, _, mode = rest.partition(":")
        if entry_kind == kind and name:
            check = None if mode == "bare" else Either((Num(-1e18, 1e18), LocalValue()))
            added.append(Flag((name,), check, gettext_noop("allowed on this machine only")))
    return added


@dataclass(frozen=True)
class LocalValue(Check):
    """Any value a machine's own addition takes, so long as it is not itself a flag."""

    def problem(self, value: str) -> str | None:
        return None if value and not value.startswith("-") else self.describe()

    def describe(self) -> str:
        return gettext_noop("a value that does not start with -")


def checked(table: FlagTable, extra_flags: str) -> list[str]:
    """The argv tokens of ``extra_flags`` (``--flag value`` or ``--flag=value``), each flag allowed by
    ``table`` or this machine's additions for its kind and its value checked; for an ``env`` table,
    ``NAME=value`` strings. ``ValueError`` (starting "extra flags: ") names the first refused one."""
    table = table.with_(local_additions(table.kind))
    tokens = split_extra_flags(extra_flags)
    return _checked_env(table, tokens) if table.env else _checked_argv(table, tokens)


def split_extra_flags(extra_flags: str) -> list[str]:
    """A command line split like a shell would; ValueError names extra_flags."""
    try:
        return shlex.split(extra_flags)
    except ValueError as exc:
        raise ValueError(
            Words(gettext_noop("extra flags: cannot be split like a shell line (%(error)s)"), error=str(exc))
        ) from None


def _checked_argv(table: FlagTable, tokens: list[str]) -> list[str]:
    out: list[str] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        name, inline, value = token.partition("=") if token.startswith("-") else (token, "", "")
        flag = table.by_name.get(name) if token.startswith("-") else None
        if flag is None:
            raise ValueError(_refusal(table, name, token))
        position += 1
        if flag.value is None:
            if inline:
                raise ValueError(Words(gettext_noop("extra flags: %(flag)s takes no value"), flag=name))
            out.append(name)
            continue
        if not inline:
            if position == len(tokens):
                raise ValueError(_needs_value(name, flag.value))
            value, position = tokens[position], position + 1
        _check_value(name, value, flag.value)
        out += [name, value]
    return out


def _checked_env(table: FlagTable, tokens: list[str]) -> list[str]:
    for token in tokens:
        match = ENV_ASSIGNMENT.match(token)
        if match is None:
            raise ValueError(Words(
                gettext_noop("extra flags: %(token)s is not NAME=value (%(kind)s takes its settings "
                             "as environment variables); allowed: %(allowed)s"),
                token=token, kind=table.label, allowed=", ".join(table.names()),
            ))
        name, value = match.groups()
        flag = table.by_name.get(name)
        if flag is None:
            raise ValueError(_refusal(table, name, token))
        if flag.value is not None:
            _check_value(name, value, flag.value)
    return tokens


def _refusal(table: FlagTable, name: str, token: str) -> Words:
    assignment = ENV_ASSIGNMENT.match(token)
    reason: str | None = REFUSED.get(name)
    if assignment and not table.env:  # an engine's command line sets no environment
        name, reason = assignment.group(1), ENVIRONMENT
    if reason is not None:
        return Words(gettext_noop("extra flags: %(flag)s %(why)s: refused for every user"),
                     flag=name, why=Words(reason))
    if not token.startswith("-") and not table.env:
        return Words(gettext_noop("extra flags: %(token)s is not a flag (each starts with -); allowed "
                                  "%(kind)s flags: %(allowed)s"),
                     token=token, kind=table.label, allowed=", ".join(table.names()))
    if table.env:
        text = gettext_noop("extra flags: %(flag)s is not an allowed %(kind)s setting; allowed: %(allowed)s")
    else:
        text = gettext_noop("extra flags: %(flag)s is not an allowed %(kind)s flag; allowed: %(allowed)s")
    return Words(text, flag=name, kind=table.label, allowed=", ".join(table.names()))


def _needs_value(name: str, check: Check) -> Words:
    text = gettext_noop("extra flags: %(flag)s needs a value: %(what)s")
    return Words(text, flag=name, what=check.describe())


def _check_value(name: str, value: str, check: Check) -> None:
    problem = check.problem(value)
    if problem is not None:
        raise ValueError(Words(gettext_noop("extra flags: %(flag)s %(value)s: must be %(what)s"),
                               flag=name, value=repr(value), what=problem))
