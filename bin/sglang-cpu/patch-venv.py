"""Two small patches bin/build-sglang applies to its SGLang venv (run with the venv's python).

1. SGLang's torch_native attention backend gets the TARGET_VERIFY pass NGRAM needs. A verify batch
   carries no extend lengths, so the backend's prefill loop fails on None; the patch supplies them:
   each request's verified length as the prefix, its draft_token_num drafts as the new tokens, their
   sum as the KV length. The loop's causal mask then lets draft i see the prefix and drafts 0..i,
   which is the draft tree's own mask only for a chain (--speculative-ngram-max-bfs-breadth 1).
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
VERIFY_NEW = f"""            *_sparkdash_extend_lens(forward_batch),  {MARK}
"""
VERIFY_HELPER = f'''

{MARK}: NGRAM verify, chain drafts only.
def _sparkdash_extend_lens(forward_batch):
    """(KV lengths, prefix lengths, new-token lengths) of an extend pass or a verify pass."""
    if not forward_batch.forward_mode.is_target_verify():
        return forward_batch.seq_lens, forward_batch.extend_prefix_lens, forward_batch.extend_seq_lens
    drafts = torch.full_like(forward_batch.seq_lens, forward_batch.spec_info.draft_token_num)
    return forward_batch.seq_lens + drafts, forward_batch.seq_lens, drafts
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


def patch(path: pathlib.Path, old: str, new: str, tail: str = "", times: int = 1) -> None:
    """Replace the occurrences of old in path (there must be `times`) and append tail, unless done."""
    text = path.read_text()
    if MARK in text:
        print(f"already patched: {path}")
        return
    if text.count(old) != times:
        raise SystemExit(f"{path}: the text to patch is not there {times} time(s); this release differs")
    path.write_text(text.replace(old, new) + tail)
    print(f"patched: {path}")


def main() -> None:
    """Apply both patches."""
    backend = package_file("sglang", "srt", "layers", "attention", "torch_native_backend.py")
    patch(backend, VERIFY_OLD, VERIFY_NEW, VERIFY_HELPER)
    patch(package_file("torchvision", "_meta_registrations.py"), FAKE_OLD, FAKE_NEW, FAKE_TAIL, times=2)


if __name__ == "__main__":
    main()
