"""Two small patches bin/build-sglang applies to its SGLang venv (run with the venv's python).

1. SGLang's torch_native attention backend gets the TARGET_VERIFY pass NGRAM needs. A verify batch
   carries no extend lengths, so the backend's prefill loop fails on None; the patch supplies them:
   each request's verified length as the prefix, its draft_token_num drafts as the new tokens, their
   sum as the KV length; and the loop's causal mask gets the draft tree's mask over the drafts (a
   causal mask alone is right only for a chain: NGRAM pads short drafts with children of the root).
   Tested with --speculative-ngram-max-bfs-breadth 1.
2. PyPI's torchvision is a CUDA build whose ops do not load under the CPU torch; SGLang imports it
   at module level (image configs), and its fake-op registrations (nms, qnms) then crash the import.
   The patch makes them no-ops when torchvision's ops did not load, as its other registrations are.

Idempotent (a marker comment); exits non-zero when a text it patches is not there (another release).
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

MARK = "# SparkDash CPU build (bin/sglang-cpu/patch-venv.py)"

VERIFY_OLD = """            forward_batch.seq_lens,
            forward_batch.extend_prefix_lens,
            forward_batch.extend_seq_lens,
"""
VERIFY_NEW = f"""            *_sparkdash_extend_lens(self, forward_batch),  {MARK}
"""
MASK_OLD = """                is_causal = False

            per_req_out_redudant = (
"""
MASK_NEW = f"""                is_causal = False
            {MARK}
            attn_mask, is_causal = _sparkdash_tree_mask(self, seq_idx, seq_len_kv, attn_mask, is_causal)

            per_req_out_redudant = (
"""
VERIFY_HELPER = f'''

{MARK}: NGRAM verify.
def _sparkdash_extend_lens(backend, forward_batch):
    """(KV lengths, prefix lengths, new-token lengths) of an extend or a verify pass; a verify pass
    also leaves its draft trees' masks, [batch, draft, draft], on the backend for the loop."""
    backend._sparkdash_trees = None
    if not forward_batch.forward_mode.is_target_verify():
        return forward_batch.seq_lens, forward_batch.extend_prefix_lens, forward_batch.extend_seq_lens
    n = forward_batch.spec_info.draft_token_num
    backend._sparkdash_trees = forward_batch.spec_info.custom_mask.view(-1, n, n).bool()
    drafts = torch.full_like(forward_batch.seq_lens, n)
    return forward_batch.seq_lens + drafts, forward_batch.seq_lens, drafts


def _sparkdash_tree_mask(backend, seq_idx, kv_len, attn_mask, is_causal):
    """In a verify pass, the drafts (the last rows and columns) see each other as their tree says."""
    trees = getattr(backend, "_sparkdash_trees", None)
    if trees is None:
        return attn_mask, is_causal
    n = trees.shape[-1]
    if attn_mask is None:
        attn_mask = torch.ones(kv_len, kv_len, dtype=torch.bool, device=trees.device).tril()
    attn_mask = attn_mask.clone()
    attn_mask[kv_len - n :, kv_len - n :] &= trees[seq_idx]
    return attn_mask, False
'''

FAKE_OLD = "@torch.library.register_fake("
FAKE_NEW = "@(lambda fn: fn) if not torchvision.extension._has_ops() else torch.library.register_fake("
FAKE_TAIL = f"\n{MARK}: fake ops registered only when torchvision's ops loaded.\n"


def package_file(package: str, *parts: str) -> pathlib.Path:
    """A file of an installed package, found without importing it (SGLang's import takes seconds)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed for {sys.executable}")
    return pathlib.Path(next(iter(spec.submodule_search_locations)), *parts)


def patch(path: pathlib.Path, edits: list[tuple[str, str]], tail: str = "", times: int = 1) -> None:
    """Make each (old, new) replacement in path (old must occur `times` times) and append tail,
    unless the file is patched already."""
    text = path.read_text()
    if MARK in text:
        print(f"already patched: {path}")
        return
    for old, new in edits:
        if text.count(old) != times:
            raise SystemExit(f"{path}: the text to patch is not there {times} time(s); this release differs")
        text = text.replace(old, new)
    path.write_text(text + tail)
    print(f"patched: {path}")


def main() -> None:
    """Apply both patches."""
    backend = package_file("sglang", "srt", "layers", "attention", "torch_native_backend.py")
    patch(backend, [(VERIFY_OLD, VERIFY_NEW), (MASK_OLD, MASK_NEW)], VERIFY_HELPER)
    patch(package_file("torchvision", "_meta_registrations.py"), [(FAKE_OLD, FAKE_NEW)], FAKE_TAIL, times=2)


if __name__ == "__main__":
    main()
