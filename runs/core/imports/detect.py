"""Which tool wrote a result file, from its contents: each reader's own fields, never the file's name.

The bytes are parsed as what they look like (JSON, JSON lines, YAML, CSV, a Markdown table), then
offered to each tool's reader in turn; the first that knows the shape reads it. A file that parses
as none, or that no reader knows, is refused with what was expected; one whose figures no run can
have (runs.core.imports.checks) is refused naming the level and the field.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import yaml

from measure.words import gettext_noop
from runs.core.imports import EXPECTED
from runs.core.imports.aiperf import is_aiperf, is_aiperf_csv, read_aiperf, read_aiperf_csv
from runs.core.imports.checks import check_file
from runs.core.imports.guidellm import is_guidellm, is_guidellm_csv, read_guidellm, read_guidellm_csv
from runs.core.imports.levels import Impossible, PeerFile, Unreadable
from runs.core.imports.llama_bench import is_llama_bench, is_llama_bench_rows, read_llama_bench
from runs.core.imports.llama_benchy import (
    is_llama_benchy,
    is_llama_benchy_table,
    read_llama_benchy,
    read_llama_benchy_table,
)
from runs.core.imports.sglang import is_sglang, read_sglang
from runs.core.imports.vllm import is_vllm, read_vllm

__all__ = ["parse", "read_results"]

MAX_BYTES = 64 * 1024 * 1024

# (knows this parsed shape, reads it); the order matters only where two could claim one shape.
READERS: tuple[tuple[Callable[[Any], bool], Callable[[Any], PeerFile]], ...] = (
    (is_vllm, read_vllm),
    (is_sglang, read_sglang),
    (is_guidellm, read_guidellm),
    (is_guidellm_csv, read_guidellm_csv),
    (is_aiperf, read_aiperf),
    (is_aiperf_csv, read_aiperf_csv),
    (is_llama_benchy, read_llama_benchy),
    (lambda rows: is_llama_benchy_table(_records(rows)),
     lambda rows: read_llama_benchy_table(_records(rows))),
    (lambda rows: is_llama_bench(_records(rows)), lambda rows: read_llama_bench(_records(rows))),
    (is_llama_bench_rows, read_llama_bench),
)


def _records(data: Any) -> Any:
    """A CSV's rows (lists) as records by its header row; anything else as it is."""
    if isinstance(data, list) and len(data) > 1 and all(isinstance(row, list) for row in data):
        return [dict(zip(data[0], row, strict=False)) for row in data[1:]]
    return data


def read_results(name: str, data: bytes) -> PeerFile:
    """The file's tool, version and levels; Unreadable names what was expected."""
    if len(data) > MAX_BYTES:
        raise Unreadable(gettext_noop("%(name)s is larger than %(mib)s MiB"), name=name, mib=MAX_BYTES >> 20)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable(gettext_noop("%(name)s is not text: expected %(expected)s"),
                         name=name, expected=EXPECTED) from None
    parsed = parse(name, text)
    for knows, read in READERS:
        if knows(parsed):
            peer = _read(read, parsed, name)
            if not peer.levels:
                raise Unreadable(gettext_noop("%(name)s holds no benchmark results"), name=name)
            check_file(name, peer)
            return peer
    raise Unreadable(gettext_noop("%(name)s is not a result file SparkDash knows: expected %(expected)s"),
                     name=name, expected=EXPECTED)


def _read(read: Callable[[Any], PeerFile], parsed: Any, name: str) -> PeerFile:
    try:
        return read(parsed)
    except Impossible as exc:
        raise exc.named(name) from None
    except Unreadable:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as exc:
        raise Unreadable(gettext_noop("%(name)s looks like %(tool)s output but is missing or has a wrong "
                                      "field (%(detail)s)"),
                         name=name, tool=read.__name__.removeprefix("read_"),
                         detail=repr(exc)[:160]) from None


def parse(name: str, text: str) -> Any:
    """JSON, JSON lines, a Markdown table, CSV or YAML, tried in that order; Unreadable if none."""
    stripped = text.strip()
    if not stripped:
        raise Unreadable(gettext_noop("%(name)s is empty"), name=name)
    if stripped[0] in "[{":
        return _json(name, stripped)
    if stripped.startswith("|"):
        return _markdown(stripped)
    first = stripped.splitlines()[0]
    if "," in first and not first.rstrip().endswith(":"):
        return [row for row in csv.reader(io.StringIO(stripped))]
    try:
        return yaml.safe_load(stripped)
    except yaml.YAMLError:
        raise Unreadable(gettext_noop("%(name)s is not JSON, CSV, YAML or a Markdown table: expected "
                                      "%(expected)s"), name=name, expected=EXPECTED) from None


def _json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:
            try:
                return [json.loads(line) for line in lines]
            except json.JSONDecodeError:
                pass
        raise Unreadable(gettext_noop("%(name)s is not complete JSON (%(where)s): cut short, or not "
                                      "%(expected)s"),
                         name=name, where=f"line {whole.lineno}, column {whole.colno}: {whole.msg}",
                         expected=EXPECTED) from None


def _markdown(text: str) -> list[dict[str, str]]:
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.strip().startswith("|")]
    header, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set("-: ") for c in r)]
    return [dict(zip(header, row, strict=False)) for row in body]
