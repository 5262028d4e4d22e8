"""engines.clients.wire: a streamed answer read off the socket, against a real local server that
answers with scripted bytes; and the clients' choice between it and httpx."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest

from engines.clients import GenerationRequest, client_for
from engines.clients.openai import OpenAIClient
from engines.clients.wire import Dechunker
from engines.errors import EngineCut, EngineHTTPError, EngineMalformed, EngineTimeout, EngineUnreachable
from engines.simulator import SimProfile, serve_in_thread
from tests.engines.stream_factories import closed_port, openai_chat_stream, usage

pytestmark = pytest.mark.backend_free

REQUEST = GenerationRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=8)
OK = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


@asynccontextmanager
async def answering(
    *pieces: bytes, pause_s: float = 0.0, seen: list[bytes] | None = None
) -> AsyncIterator[str]:
    """A server on 127.0.0.1 that reads the request, then writes `pieces` one by one (and closes)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        request = head + await reader.readexactly(length)
        if seen is not None:
            seen.append(request)
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(pause_s)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def chunked(body: bytes, size: int) -> Iterator[bytes]:
    """`body` as chunked transfer-encoding, `size` bytes a chunk, then the last chunk."""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        yield b"%x\r\n%s\r\n" % (len(part), part)
    yield b"0\r\n\r\n"


async def texts(url: str, read_s: float = 30.0) -> tuple[list[str], int | None]:
    async with OpenAIClient(url, timeout=read_s, flavour="vllm") as client:
        gen = await client.generate(REQUEST)
    return [c.text for c in gen.chunks], gen.figures.output_tokens


BODY = openai_chat_stream(["Hel", "lo", "!"], "vllm", usage(3))


def test_it_reads_the_socket_for_a_plain_http_engine_and_httpx_otherwise(monkeypatch):
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    assert OpenAIClient("http://127.0.0.1:1", flavour="vllm")._on_wire
    assert not OpenAIClient("https://engine.example", flavour="vllm")._on_wire
    assert not OpenAIClient(
        "http://127.0.0.1:1", transport=httpx.AsyncHTTPTransport(), flavour="vllm"
    )._on_wire
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    assert not OpenAIClient("http://engine.example:8080", flavour="vllm")._on_wire


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
async def test_it_reads_a_chunked_answer_cut_anywhere(size):
    wire = b"".join(chunked(BODY, 23))
    pieces = [wire[i : i + size] for i in range(0, len(wire), size)]
    async with answering(OK + b"Transfer-Encoding: chunked\r\n\r\n", *pieces) as url:
        assert await texts(url) == (["Hel", "lo", "!"], 3)


async def test_it_reads_an_answer_of_a_known_length_and_one_ended_by_the_close():
    async with answering(
        OK + b"Content-Length: %d\r\n\r\n" % len(BODY), BODY, b"extra bytes after the body"
    ) as url:
        assert await texts(url) == (["Hel", "lo", "!"], 3)
    async with answering(OK + b"\r\n", BODY) as url:
        assert await texts(url) == (["Hel", "lo", "!"], 3)


async def test_it_sends_the_request_httpx_builds_asking_for_no_compression():
    seen: list[bytes] = []
    async with answering(OK + b"\r\n", BODY, seen=seen) as url:
        await OpenAIClient(url, api_key="key", flavour="vllm").generate(REQUEST)
    head, _, body = next(r for r in seen if r.startswith(b"POST")).partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"Authorization: Bearer key" in head.split(b"\r\n")
    assert b"Accept-Encoding: identity" in head.split(b"\r\n")
    assert b'"max_tokens":8' in body and b'"stream":true' in body


async def test_it_skips_an_interim_answer_and_raises_an_http_error_with_its_text():
    page = b"<html><h1>503</h1><p>Loading model</p></html>"
    head = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n"
    async with answering(head % len(page), page) as url:
        with pytest.raises(EngineHTTPError, match=r"answered HTTP 503: 503 Loading model") as caught:
            await texts(url)
    assert caught.value.status == 503


async def test_it_raises_a_cut_when_the_connection_ends_mid_answer():
    wire = b"".join(chunked(BODY, 50))
    async with answering(OK + b"Transfer-Encoding: chunked\r\n\r\n", wire[:120]) as url:
        with pytest.raises(EngineCut, match="closed mid-answer"):
            await texts(url)
    async with answering(OK + b"Content-Length: %d\r\n\r\n" % len(BODY), BODY[:200]) as url:
        with pytest.raises(EngineCut, match="closed mid-answer"):
            await texts(url)


@pytest.mark.parametrize(
    ("head", "match"),
    [
        (b"SPDY/3 200 OK\r\n\r\n", "did not answer in HTTP/1.x"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
        (OK + b"Content-Encoding: gzip\r\n\r\n", r"compressed its answer \(gzip\)"),
        (OK + b"Content-Length: -4\r\n\r\n", "malformed Content-Length"),
        (OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (OK + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", "did not end where its size said"),
        (OK + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n", "headers longer than 65536 bytes"),
    ],
)
async def test_it_refuses_a_malformed_answer(head, match):
    async with answering(head) as url:
        with pytest.raises(EngineMalformed, match=match):
            await texts(url)


async def test_it_raises_a_timeout_when_the_engine_sends_nothing_for_the_read_timeout():
    async with answering(OK + b"\r\n", BODY[:50], b"", pause_s=1.0) as url:
        with pytest.raises(EngineTimeout, match=r"sent nothing for 0.2 s \(the per-request read timeout\)"):
            await texts(url, read_s=0.2)


async def test_it_raises_unreachable_when_nothing_listens():
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(EngineUnreachable, match=f"cannot reach {url}"):
        await texts(url)


async def test_it_stamps_each_chunk_with_the_read_that_brought_it():
    role, blank, a, *rest = BODY.splitlines(keepends=True)
    async with answering(OK + b"\r\n", role + blank + a, b"".join(rest), pause_s=0.05) as url:
        gen = await OpenAIClient(url, flavour="vllm").generate(REQUEST)
    hel, lo, _ = gen.chunks
    assert lo.t - hel.t >= 0.04  # "lo" came with the second piece, 50 ms after the first
    assert gen.sent_at < hel.t


def test_it_dechunks_trailers_and_extensions_and_stops_at_the_last_chunk():
    dechunk = Dechunker()
    assert dechunk.feed(b"3;ext=1\r\nabc\r") == b"abc"
    assert dechunk.feed(b"\n0\r\nTrailer: x\r\n") == b""
    assert not dechunk.done
    assert dechunk.feed(b"\r\n") == b"" and dechunk.done


async def test_it_gives_the_same_chunks_and_figures_as_httpx_from_the_simulator():
    request = GenerationRequest(model="sim", messages=[{"role": "user", "content": "write"}], max_tokens=40)
    with serve_in_thread(SimProfile(decode_tps=2000.0, ttft_ms=1.0, lookahead=3)) as sim:
        async with client_for("llama-server", sim.url) as on_wire:
            assert on_wire._on_wire
            wire_gen = await on_wire.generate(request)
        transport = httpx.AsyncHTTPTransport()
        async with OpenAIClient(sim.url, transport=transport, flavour="llama-server") as on_httpx:
            httpx_gen = await on_httpx.generate(request)
    assert [c.text for c in wire_gen.chunks] == [c.text for c in httpx_gen.chunks]
    assert wire_gen.figures == httpx_gen.figures


async def test_it_refuses_a_line_past_the_clients_bound_and_reads_a_last_line_without_its_newline():
    async with answering(OK + b"\r\n", b"data: " + b"x" * (1024 * 1024 + 10)) as url:
        with pytest.raises(EngineMalformed, match="a streamed line exceeded 1 MiB"):
            await texts(url)
    ndjson = b'{"message": {"content": "hi"}, "done": false}\n{"done": true, "eval_count": 1}'
    async with answering(b"HTTP/1.1 200 OK\r\n\r\n", ndjson) as url, client_for("ollama", url) as client:
        gen = await client.generate(REQUEST)
    assert (gen.text, gen.figures.output_tokens) == ("hi", 1)
