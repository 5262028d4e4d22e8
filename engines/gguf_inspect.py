"""Inspect a GGUF model: architecture, tensors, quantization, bytes read per token, MTP layers.

A complete local file is read with ``gguf.GGUFReader`` (gguf==0.19.0). A partial file (a truncated
local copy, or the first few MB of a remote file, engines.gguf_remote) is read with
``parse_header``, our own parser of the header and tensor-info section: GGUFReader maps the whole
file and fails on a prefix. Remote reads start at 4 MiB and double until the header fits (256 MiB
cap); the tokenizer arrays are what make headers several MB long.

Bytes read per generated token (the roofline denominator, see ``engines.roofline``):

- every tensor counts, norms and biases included, except
- the token embedding table (``token_embd``, and ``per_layer_token_embd``/``position_embd``): a
  decode step gathers one row of it, not the whole table. When the model has no ``output.weight``
  the embedding is tied as the output head, multiplied in full every token, and counts fully;
- MTP/NextN tensors (``*.nextn.*``, ``nextn.*``, ``mtp.*``): plain decoding skips them (llama.cpp
  does not even load them); they are reported apart as ``mtp_bytes``;
- MoE (``{arch}.expert_count`` and ``{arch}.expert_used_count`` set): routed expert tensors
  (``*_exps*``) count ``used / count`` of their bytes, shared experts (``*_shexp*``) count fully.
  Expert tensors without those keys count fully (an upper bound).
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFValueType

__all__ = [
    "FIRST_PREFIX_BYTES",
    "MAX_PREFIX_BYTES",
    "GGUFError",
    "GGUFInfo",
    "Header",
    "MoE",
    "TensorInfo",
    "inspect_file",
    "parse_header",
    "per_token_bytes",
    "read_header",
]

MiB = 1024 * 1024
FIRST_PREFIX_BYTES = 4 * MiB
MAX_PREFIX_BYTES = 256 * MiB
MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
# Tables a decode step reads one row of (by token id or position), not in full.
GATHERED = frozenset({"token_embd.weight", "per_layer_token_embd.weight", "position_embd.weight"})

_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
# Keyed by the raw type code read from the file (GGUFValueType is an IntEnum, equal to its code).
_SCALARS: dict[int, struct.Struct] = {
    GGUFValueType.UINT8: struct.Struct("<B"),
    GGUFValueType.INT8: struct.Struct("<b"),
    GGUFValueType.UINT16: struct.Struct("<H"),
    GGUFValueType.INT16: struct.Struct("<h"),
    GGUFValueType.UINT32: _U32,
    GGUFValueType.INT32: struct.Struct("<i"),
    GGUFValueType.FLOAT32: struct.Struct("<f"),
    GGUFValueType.BOOL: struct.Struct("<?"),
    GGUFValueType.UINT64: _U64,
    GGUFValueType.INT64: struct.Struct("<q"),
    GGUFValueType.FLOAT64: struct.Struct("<d"),
}


class GGUFError(Exception):
    """Not a GGUF, a truncated or unreadable one, or the file could not be fetched."""


class _ShortBuffer(Exception):
    """The header runs past the bytes we have; ``needed`` is a lower bound on the prefix size."""

    def __init__(self, needed: int) -> None:
        super().__init__(f"need at least {needed} bytes")
        self.needed = needed


class TensorInfo(NamedTuple):
    name: str
    ggml_type: str  # GGMLQuantizationType name, e.g. "Q4_K"
    shape: tuple[int, ...]  # ggml order as stored (fastest-varying first): reversed numpy order
    n_bytes: int
    data_offset: int  # absolute, from the start of the file


class MoE(NamedTuple):
    experts: int
    used: int


@dataclass(frozen=True)
class Header:
    """What ``parse_header`` read: scalar and string KVs (arrays skipped), tensor infos, size."""

    version: int
    kv: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    size: int  # bytes up to the end of the tensor infos

    @property
    def data_end(self) -> int:
        return max((t.data_offset + t.n_bytes for t in self.tensors), default=self.size)


class _Cursor:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def skip(self, n: int) -> int:
        end = self.pos + n
        if end > len(self.buf):
            raise _ShortBuffer(end)
        start, self.pos = self.pos, end
        return start

    def take(self, st: struct.Struct) -> Any:
        return st.unpack_from(self.buf, self.skip(st.size))[0]

    def string(self) -> str:
        n = self.take(_U64)
        start = self.skip(n)
        return self.buf[start : start + n].decode("utf-8", "replace")

    def value(self, vtype: int) -> Any:
        """Read one KV value; arrays are skipped and come back as None."""
        if vtype == GGUFValueType.STRING:
            return self.string()
        if vtype == GGUFValueType.ARRAY:
            etype, count = self.take(_U32), self.take(_U64)
            if etype in _SCALARS:
                self.skip(count * _SCALARS[etype].size)
            else:
                for _ in range(count):
                    self.value(etype)
            return None
        if vtype not in _SCALARS:
            raise GGUFError(f"unknown GGUF value type {vtype} at byte {self.pos}")
        return self.take(_SCALARS[vtype])


def parse_header(buf: bytes) -> Header:
    """Parse a GGUF header and tensor infos from the start of a file.

    :raises _ShortBuffer: (internal) when ``buf`` ends inside the header.
    :raises GGUFError: when the bytes are not a GGUF header.
    """
    cur = _Cursor(buf)
    if buf[:4] != MAGIC[: len(buf)]:
        raise GGUFError(f"not a GGUF file (starts with {bytes(buf[:4])!r}, not {MAGIC!r})")
    cur.skip(4)
    version = cur.take(_U32)
    if version not in (2, 3):
        raise GGUFError(f"unsupported GGUF version {version}")
    n_tensors, n_kv = cur.take(_U64), cur.take(_U64)
    kv: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        value = cur.value(cur.take(_U32))
        if value is not None:
            kv[key] = value
    infos = [_tensor_info(cur) for _ in range(n_tensors)]
    alignment = kv.get("general.alignment", DEFAULT_ALIGNMENT)
    data_start = -(-cur.pos // alignment) * alignment
    tensors = tuple(t._replace(data_offset=data_start + t.data_offset) for t in infos)
    return Header(version, kv, tensors, cur.pos)


def _tensor_info(cur: _Cursor) -> TensorInfo:
    name = cur.string()
    n_dims = cur.take(_U32)
    if n_dims > MAX_DIMS:
        raise GGUFError(f"tensor {name!r} has {n_dims} dimensions (at most {MAX_DIMS})")
    shape = tuple(cur.take(_U64) for _ in range(n_dims))
    raw_type = cur.take(_U32)
    try:
        ggml_type = GGMLQuantizationType(raw_type)
    except ValueError:
        raise GGUFError(f"tensor {name!r} has unknown ggml type {raw_type}") from None
    block_size, type_size = GGML_QUANT_SIZES[ggml_type]
    n_bytes = prod(shape) * type_size // block_size
    return TensorInfo(name, ggml_type.name, shape, n_bytes, cur.take(_U64))


def read_header(
    fetch: Callable[[int, int], bytes],
    first_bytes: int = FIRST_PREFIX_BYTES,
    max_bytes: int = MAX_PREFIX_BYTES,
) -> tuple[Header, int]:
    """Parse the header from a growing prefix; ``fetch(start, end)`` returns bytes [start, end).

    Fewer bytes than asked means the file ended. Returns the header and the prefix length read.
    """
    buf, want = b"", first_bytes
    while True:
        buf += fetch(len(buf), want)
        try:
            return parse_header(buf), len(buf)
        except _ShortBuffer as short:
            if len(buf) < want:
                raise GGUFError(f"the file ends at byte {len(buf)}, inside its GGUF header") from None
            if want >= max_bytes:
                raise GGUFError(f"the GGUF header is larger than {max_bytes} bytes") from None
            want = min(max_bytes, max(2 * want, short.needed))


@dataclass(frozen=True)
class GGUFInfo:
    """The findings about one GGUF; ``to_dict()`` is the JSON the command prints."""

    source: str
    reader: str  # "gguf" (GGUFReader, whole file) or "prefix" (parse_header)
    kv: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    header_bytes: int
    prefix_bytes_read: int | None = None  # remote reads only

    @property
    def architecture(self) -> str | None:
        return self.kv.get("general.architecture")

    @property
    def nextn_predict_layers(self) -> int:
        return int(self.kv.get(f"{self.architecture}.nextn_predict_layers", 0))

    @property
    def mtp_layers(self) -> bool:
        """Built-in speculative decoding (MTP / NextN) is possible."""
        return self.nextn_predict_layers > 0 or any(_is_mtp(t.name) for t in self.tensors)

    @property
    def moe(self) -> MoE | None:
        experts = int(self.kv.get(f"{self.architecture}.expert_count", 0))
        used = int(self.kv.get(f"{self.architecture}.expert_used_count", 0))
        return MoE(experts, used) if experts > 0 and used > 0 else None

    @property
    def tensors_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def mtp_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors if _is_mtp(t.name))

    @property
    def bytes_per_token(self) -> int:
        return per_token_bytes(self.tensors, self.moe)

    @property
    def quantization(self) -> dict[str, dict[str, int]]:
        return _quantization(self.tensors)

    def to_dict(self, tensors: bool = False) -> dict[str, Any]:
        moe = self.moe
        found: dict[str, Any] = {
            "source": self.source,
            "reader": self.reader,
            "architecture": self.architecture,
            "name": self.kv.get("general.name"),
            "size_label": self.kv.get("general.size_label"),
            "parameter_count": self.kv.get("general.parameter_count"),
            "tensor_elements": sum(prod(t.shape) for t in self.tensors),
            "tensor_count": len(self.tensors),
            "header_bytes": self.header_bytes,
            "tensors_bytes": self.tensors_bytes,
            "bytes_per_token": self.bytes_per_token,
            "quantization": self.quantization,
            "moe": moe._asdict() if moe else None,
            "mtp_layers": self.mtp_layers,
            "nextn_predict_layers": self.nextn_predict_layers,
            "mtp_bytes": self.mtp_bytes,
            "prefix_bytes_read": self.prefix_bytes_read,
        }
        if tensors:
            found["tensors"] = [t._asdict() for t in self.tensors]
        return found


def _is_mtp(name: str) -> bool:
    return ".nextn." in name or name.startswith(("nextn.", "mtp."))


def per_token_bytes(tensors: Iterable[TensorInfo], moe: MoE | None) -> int:
    """Bytes of weights one decode step reads; the rules are in the module docstring."""
    tensors = list(tensors)
    tied = not any(t.name == "output.weight" for t in tensors)
    dense = experts = 0
    for t in tensors:
        if _is_mtp(t.name) or (t.name in GATHERED and not (tied and t.name == "token_embd.weight")):
            continue
        if "_exps" in t.name:
            experts += t.n_bytes
        else:
            dense += t.n_bytes
    if moe is None:
        return dense + experts
    return dense + round(experts * moe.used / moe.experts)


def _quantization(tensors: Iterable[TensorInfo]) -> dict[str, dict[str, int]]:
    by_type: dict[str, dict[str, int]] = {}
    for t in tensors:
        entry = by_type.setdefault(t.ggml_type, {"tensors": 0, "bytes": 0})
        entry["tensors"] += 1
        entry["bytes"] += t.n_bytes
    return dict(sorted(by_type.items(), key=lambda item: -item[1]["bytes"]))


def inspect_header(path: str | Path) -> GGUFInfo:
    """The findings from the header alone (fast: no tensor data, no tokenizer decoding)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            header, _ = read_header(lambda start, end: _read_at(f, start, end))
    except OSError as exc:
        raise GGUFError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return GGUFInfo(str(path), "prefix", header.kv, header.tensors, header.size)


def inspect_file(path: str | Path) -> GGUFInfo:
    """Inspect a local GGUF; a truncated one (say the first few MB) is read from its header alone."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            header, _ = read_header(lambda start, end: _read_at(f, start, end))
        size = path.stat().st_size
    except OSError as exc:
        raise GGUFError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if size < header.data_end:
        return GGUFInfo(str(path), "prefix", header.kv, header.tensors, header.size)
    kv, tensors = _read_whole(path)
    for ours, theirs in zip(header.tensors, tensors, strict=True):
        if ours != theirs:  # a parser bug or a ggml type whose size we get wrong
            raise GGUFError(f"parse_header and GGUFReader disagree: {ours} != {theirs}")
    return GGUFInfo(str(path), "gguf", kv, tensors, header.size)


def _read_at(f: BinaryIO, start: int, end: int) -> bytes:
    f.seek(start)
    return f.read(end - start)


def _read_whole(path: Path) -> tuple[dict[str, Any], tuple[TensorInfo, ...]]:
    try:
        reader = GGUFReader(path)
    except (ValueError, KeyError) as exc:
        raise GGUFError(f"gguf.GGUFReader cannot read {path}: {exc}") from exc
    kv = {
        key: field.contents()
        for key, field in reader.fields.items()
        if not key.startswith("GGUF.") and field.types and field.types[0] != GGUFValueType.ARRAY
    }
    tensors = tuple(
        TensorInfo(t.name, t.tensor_type.name, tuple(int(d) for d in t.shape), int(t.n_bytes), t.data_offset)
        for t in reader.tensors
    )
    return kv, tensors
