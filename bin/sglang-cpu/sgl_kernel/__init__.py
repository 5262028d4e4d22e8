"""SparkDash's CPU test stand-in for the SGLang kernel helpers PyPI has no CPU build of.

SGLang imports a few helpers from ``sgl_kernel`` unconditionally when it runs on the CPU, and the
only ``sglang-kernel`` wheel on PyPI is a CUDA build. This package is installed by SparkDash's test
engine build (bin/build-sglang) and nowhere else: it gives the helpers that plain decoding and NGRAM
speculative decoding (tested with breadth 1) call, written in plain torch from the semantics
of SGLang's own Triton kernels. It is slow and only as general as those two paths need.

Every other name imports (SGLang imports many it never calls on this path) but raises
NotImplementedError when called, so a path this stand-in does not cover fails loudly instead of
computing something wrong. It registers no torch ops: ``torch.ops.sgl_kernel`` stays empty, so SGLang
does not take the AMX kernels (``convert_weight_packed``) to exist.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import NoReturn

import torch

from sgl_kernel import speculative
from sgl_kernel._missing import not_provided
from sgl_kernel.speculative import (
    fill_accept_out_cache_loc_cpu,
    fill_bonus_tokens_cpu,
    verify_tree_greedy_cpu,
)

__all__ = [
    "assign_extend_cache_locs_cpu",
    "assign_req_to_token_pool_cpu",
    "copy_all_layer_kv_cache_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "speculative",
    "verify_tree_greedy_cpu",
]


def _spans(start_offset: torch.Tensor, end_offset: torch.Tensor) -> list[tuple[int, int, int]]:
    """(start, end, offset into the packed locations) of each request, in batch order."""
    spans, offset = [], 0
    for start, end in zip(start_offset.tolist(), end_offset.tolist(), strict=True):
        spans.append((int(start), int(end), offset))
        offset += int(end) - int(start)
    return spans


def assign_req_to_token_pool_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """Write each request's packed KV slots into its req_to_token row, columns [start, end)."""
    del pool_len  # the row length is req_to_token's own
    spans = _spans(start_offset, end_offset)
    for row, (start, end, offset) in zip(req_pool_indices.tolist(), spans, strict=True):
        req_to_token[row, start:end] = out_cache_loc[offset : offset + end - start].to(req_to_token.dtype)


def assign_extend_cache_locs_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """The reverse: pack each request's req_to_token columns [start, end) into out_cache_loc."""
    del pool_len
    spans = _spans(start_offset, end_offset)
    for row, (start, end, offset) in zip(req_pool_indices.tolist(), spans, strict=True):
        out_cache_loc[offset : offset + end - start] = req_to_token[row, start:end].to(out_cache_loc.dtype)


def copy_all_layer_kv_cache_cpu(
    data_ptrs: torch.Tensor, strides: torch.Tensor, tgt_loc: torch.Tensor, src_loc: torch.Tensor
) -> None:
    """Copy KV slot rows src_loc -> tgt_loc in every buffer, given by base address and row bytes.

    All source rows are read before any is written, so overlapping moves are safe (as in the
    kernel). The buffers are reached through their raw addresses because that is all SGLang passes.
    """
    if tgt_loc.numel() == 0:
        return
    rows_needed = int(torch.maximum(tgt_loc.max(), src_loc.max()).item()) + 1
    for address, row_bytes in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        raw = (ctypes.c_uint8 * (rows_needed * int(row_bytes))).from_address(int(address))
        rows = torch.frombuffer(raw, dtype=torch.uint8).view(rows_needed, int(row_bytes))
        rows[tgt_loc.long()] = rows[src_loc.long()]


def __getattr__(name: str) -> Callable[..., NoReturn]:
    """Any other helper imports fine and fails loudly when called."""
    if name.startswith("__"):
        raise AttributeError(name)
    return not_provided(name)
