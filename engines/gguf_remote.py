"""Inspect a remote GGUF from the first few MB of it, fetched with HTTP range requests.

The prefix starts at FIRST_PREFIX_BYTES and doubles until the header fits (MAX_PREFIX_BYTES cap);
engines.gguf_inspect parses it.
"""
from __future__ import annotations

import httpx

from engines.gguf_inspect import FIRST_PREFIX_BYTES, MAX_PREFIX_BYTES, GGUFError, GGUFInfo, read_header

__all__ = ["inspect_url"]


def inspect_url(
    url: str,
    client: httpx.Client | None = None,
    *,
    first_bytes: int = FIRST_PREFIX_BYTES,
    max_bytes: int = MAX_PREFIX_BYTES,
) -> GGUFInfo:
    """Inspect a remote GGUF from a prefix fetched with HTTP range requests (doubling as needed)."""
    own = client is None
    http = client or httpx.Client(timeout=60.0, follow_redirects=True)
    try:
        header, read = read_header(lambda start, end: _fetch(http, url, start, end), first_bytes, max_bytes)
    finally:
        if own:
            http.close()
    return GGUFInfo(url, "prefix", header.kv, header.tensors, header.size, prefix_bytes_read=read)


def _fetch(client: httpx.Client, url: str, start: int, end: int) -> bytes:
    try:
        with client.stream("GET", url, headers={"Range": f"bytes={start}-{end - 1}"}) as resp:
            if resp.status_code == 416:  # nothing at or after `start`: the file has ended
                return b""
            if resp.status_code not in (200, 206):
                raise GGUFError(f"GET {url}: HTTP {resp.status_code}")
            got = resp.headers.get("content-range", "")
            if resp.status_code == 206 and not got.startswith(f"bytes {start}-"):
                raise GGUFError(f"GET {url}: asked for bytes {start}-{end - 1}, got {got!r}")
            # A 200 is the whole file from byte 0: the server ignored the Range header.
            return _read_stream(resp, start if resp.status_code == 200 else 0, end - start)
    except httpx.HTTPError as exc:
        raise GGUFError(f"GET {url}: {exc}") from exc


def _read_stream(resp: httpx.Response, skip: int, count: int) -> bytes:
    """Bytes [skip, skip + count) of the body; stops reading (and drops the rest) once it has them."""
    chunks, have = [], -skip
    for chunk in resp.iter_bytes():
        chunks.append(chunk)
        have += len(chunk)
        if have >= count:
            break
    return b"".join(chunks)[skip : skip + count]
