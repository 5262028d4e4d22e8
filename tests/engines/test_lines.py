"""engines.clients.lines and every engine client's streamed lines: linear time, a bound per line."""
from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from engines.clients import GenerationRequest, client_for
from engines.clients.lines import MIB, LineTooLong, bounded_lines, size_text
from engines.errors import EngineMalformed
from tests.engines.stream_factories import NDJSON, SSE, serve

pytestmark = pytest.mark.backend_free

PIECE = 64 * 1024
REQUEST = GenerationRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=8)
PATHS = {"ollama": "/api/chat", "llama-server": "/v1/chat/completions", "vllm": "/v1/chat/completions",
         "sglang": "/generate"}  # fmt: skip


async def pieces_of(data: bytes, size: int = PIECE) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


async def split(data: bytes, max_line: int, size: int = PIECE) -> list[bytes]:
    return [line async for line in bounded_lines(pieces_of(data, size), max_line)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
async def test_it_splits_lines_across_any_pieces_as_a_plain_split_would(size: int) -> None:
    data = b"data: a\r\n\r\nb\n\nccc\nlast"
    assert await split(data, 100, size) == [b"data: a", b"", b"b", b"", b"ccc", b"last"]


async def test_it_allows_a_line_of_exactly_the_bound_and_refuses_one_byte_more() -> None:
    assert await split(b"x" * 10 + b"\n", 10, 3) == [b"x" * 10]
    with pytest.raises(LineTooLong, match="a streamed line exceeded 10 bytes"):
        await split(b"x" * 11 + b"\n", 10, 3)
    with pytest.raises(LineTooLong):  # a last line without its newline too
        await split(b"ok\n" + b"x" * 11, 10, 3)


async def test_it_stops_reading_an_endless_line_at_the_bound() -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"x" * PIECE

    with pytest.raises(LineTooLong, match="exceeded 1 MiB"):
        async for _ in bounded_lines(endless(), MIB):
            pass
    assert pulled == MIB // PIECE + 1  # memory held: the bound and one piece


async def test_it_reads_long_lines_in_linear_time() -> None:
    # Three lines of 40 MB cost 32 s of CPU when each piece was joined onto the pending line and
    # split again; linear reading costs a small multiple of merely walking the pieces.
    data = (b"x" * (40 * 10**6) + b"\n") * 3

    async def walk() -> int:
        return sum([len(piece) async for piece in pieces_of(data)])

    started = time.process_time()
    assert await walk() == len(data)
    reference = time.process_time() - started
    started = time.process_time()
    lines = await split(data, 64 * MIB)
    took = time.process_time() - started
    assert [len(line) for line in lines] == [40 * 10**6] * 3
    assert took < max(20 * reference, 1.5), (took, reference)


def test_it_names_sizes_as_people_say_them() -> None:
    sizes = [size_text(n) for n in (MIB, 4 * MIB, 64 * 1024, 1500)]
    assert sizes == ["1 MiB", "4 MiB", "64 KiB", "1500 bytes"]


@pytest.mark.parametrize("kind", list(PATHS))
async def test_it_fails_every_engine_clients_stream_on_an_over_long_line(kind: str) -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        yield b"data: " if kind != "ollama" else b'{"message": {"content": "'
        while True:
            pulled += 1
            yield b"x" * PIECE

    answer = httpx.Response(200, content=endless(), headers=SSE if kind != "ollama" else NDJSON)
    routes = {f"POST {PATHS[kind]}": answer, "POST /tokenize": httpx.Response(200, json={"tokens": [1, 2]})}
    client = client_for(kind, "http://engine.test", transport=serve(routes))
    async with client:
        with pytest.raises(EngineMalformed, match="a streamed line exceeded 1 MiB"):
            await client.generate(REQUEST)
    assert pulled <= MIB // PIECE + 1
