"""Plain-torch stand-ins for the speculative-decoding helpers SGLang's NGRAM path calls on the CPU.

Part of SparkDash's CPU test stand-in (see the package docstring). Semantics follow SGLang's Triton
kernels of the same names: the tree-mask reconstruction, greedy tree verification and the
accepted-token bookkeeping. Written for clarity over speed: batches and drafts here are tiny.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

import torch

from sgl_kernel._missing import not_provided


def _as_rows(tensor: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """The first rows * cols elements of a contiguous output tensor, as a (rows, cols) view."""
    return tensor.view(-1)[: rows * cols].view(rows, cols)


def reconstruct_indices_from_tree_mask(
    tree_mask: torch.Tensor,
    verified_seq_len: torch.Tensor,
    positions: torch.Tensor,
    retrieve_index: torch.Tensor,
    retrieve_next_token: torch.Tensor,
    retrieve_next_sibling: torch.Tensor,
    batch_size: int,
    draft_token_num: int,
) -> None:
    """Fill positions and the retrieve_* links of each draft tree from its n x n ancestor mask.

    tree_mask[b, i, j] marks j an ancestor of i (only j < i counts). A node's position is its
    depth plus the verified length; its next token is the first later node it is an ancestor of;
    its next sibling the first later node with the same parent (-1 for roots and when none).
    """
    n, device = draft_token_num, tree_mask.device
    if batch_size == 0:
        return
    mask = tree_mask.view(-1)[: batch_size * n * n].view(batch_size, n, n).bool()
    node = torch.arange(n, device=device)
    ancestors = mask & (node[None, :] < node[:, None])  # [b, node i, ancestor j]
    depth = ancestors.sum(dim=2)
    _as_rows(positions, batch_size, n).copy_(depth + verified_seq_len[:batch_size, None].to(depth.dtype))
    flat = torch.arange(batch_size * n, device=device).view(batch_size, n)
    _as_rows(retrieve_index, batch_size, n).copy_(flat)
    parent = torch.where(ancestors, node[None, None, :], -1).max(dim=2).values  # [b, i]
    first_below = torch.where(ancestors, node[None, :, None], n).min(dim=1).values  # [b, j]
    next_token = torch.where(first_below < n, first_below, -1)
    _as_rows(retrieve_next_token, batch_size, n).copy_(next_token)
    later = node[:, None] > node[None, :]  # [k, tid]
    same_parent = (parent[:, :, None] == parent[:, None, :]) & later[None]
    first_sibling = torch.where(same_parent, node[None, :, None], n).min(dim=1).values
    next_sibling = torch.where((parent >= 0) & (first_sibling < n), first_sibling, -1)
    _as_rows(retrieve_next_sibling, batch_size, n).copy_(next_sibling)


def _walk_greedy(
    candidates: list[int],
    index: list[int],
    next_token: list[int],
    next_sibling: list[int],
    target: list[int],
    levels: int,
) -> list[int]:
    """One request's accepted path through its draft tree: the flat indices of the accepted nodes,
    starting at the root. A child is accepted when its token is what the target predicted after
    the last accepted node."""
    accepted, node = [index[0]], 0
    for _ in range(1, levels):
        node, wanted = next_token[node], target[accepted[-1]]
        while node != -1 and candidates[node] != wanted:
            node = next_sibling[node]
        if node == -1:
            break
        accepted.append(index[node])
    return accepted


def verify_tree_greedy_cpu(
    predicts: torch.Tensor,
    accept_index: torch.Tensor,
    accept_token_num: torch.Tensor,
    candidates: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    target_predict: torch.Tensor,
) -> None:
    """Greedy verification: accept the longest draft path the target model agrees with.

    predicts[flat node] gets the target's token after every accepted node (the last one's is the
    bonus token), accept_index[b] the accepted nodes' flat indices (rest untouched), and
    accept_token_num[b] how many drafts were accepted (the root excluded).
    """
    batch_size = candidates.shape[0]
    target = target_predict.reshape(-1).tolist()
    for b in range(batch_size):
        path = _walk_greedy(
            candidates[b].tolist(),
            retrive_index[b].tolist(),
            retrive_next_token[b].tolist(),
            retrive_next_sibling[b].tolist(),
            target,
            accept_index.shape[1],
        )
        for slot, flat in enumerate(path):
            accept_index[b, slot] = flat
            predicts.view(-1)[flat] = target[flat]
        accept_token_num[b] = len(path) - 1


def fill_bonus_tokens_cpu(
    accept_tokens: torch.Tensor, accept_lens: torch.Tensor, bonus_tokens: torch.Tensor, accept_stride: int
) -> None:
    """bonus_tokens[i] = the last accepted token of request i (accept_lens include the bonus)."""
    rows = torch.arange(accept_lens.numel(), device=accept_lens.device)
    picked = accept_tokens.reshape(-1)[rows * accept_stride + accept_lens.long() - 1]
    bonus_tokens.view(-1)[: rows.numel()].copy_(picked)


def fill_accept_out_cache_loc_cpu(
    accept_index: torch.Tensor, out_cache_loc: torch.Tensor, accept_out_cache_loc: torch.Tensor
) -> None:
    """Pack the KV slots of the accepted nodes (accept_index entries other than -1), in order."""
    flat = accept_index.reshape(-1)
    kept = flat[flat != -1].long()
    accept_out_cache_loc[: kept.numel()] = out_cache_loc[kept].to(accept_out_cache_loc.dtype)


def __getattr__(name: str) -> Callable[..., NoReturn]:
    """Any other speculative helper imports fine and fails loudly when called."""
    if name.startswith("__"):
        raise AttributeError(name)
    return not_provided(f"speculative.{name}")
