"""Streamed lines (SSE, NDJSON) split in linear time, with a bound on each line's length.

The engine clients and the relay read an engine's answer as lines. Joining each new piece onto
what is pending and splitting it all again costs time quadratic in a line's length (a line of
40 MB took seconds of CPU); here each byte is copied at most twice, and a line longer than the
bound stops the stream with :class:`LineTooLong` before more of it is kept in memory.
Plain Python, no Django: the relay's core imports it too.
"""
from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

__all__ = ["MAX_LINE_BYTES", "MIB", "LineSplitter", "LineTooLong", "bounded_lines", "size_text"]

MIB = 1024 * 1024
# An engine client's chat stream carries one delta (or the final figures) per line: kilobytes.
MAX_LINE_BYTES = MIB


class LineTooLong(ValueError):
    """A streamed line ran past the bound; the message names the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a streamed line exceeded {size_text(limit)}")
        self.limit = limit


def size_text(size: int) -> str:
    """A byte count as people say it: "1 MiB", "64 KiB", "1500 bytes"."""
    for unit, name in ((MIB, "MiB"), (1024, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"


class LineSplitter:
    """Lines out of pieces as they come, without their newline or a trailing CR; a line longer
    than `max_line` bytes (its CR included) raises LineTooLong as soon as it does.

    Plain calls, not an async generator: a reader that stamps its own pieces (engines.clients.wire)
    splits them where it reads them, with no generator between.
    """

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.pending = bytearray()

    def feed(self, piece: bytes) -> list[bytes]:
        """The lines `piece` completes, in order."""
        lines, start, pending, max_line = [], 0, self.pending, self.max_line
        while (end := piece.find(b"\n", start)) >= 0:
            if len(pending) + end - start > max_line:
                raise LineTooLong(max_line)
            if pending:
                pending += piece[start:end]
                line, pending = bytes(pending), bytearray()
            else:
                line = piece[start:end]
            lines.append(line.rstrip(b"\r"))
            start = end + 1
        if len(pending) + len(piece) - start > max_line:
            raise LineTooLong(max_line)
        pending += piece[start:]
        self.pending = pending
        return lines

    def rest(self) -> bytes | None:
        """The last line, when the stream ended without its newline (None when it is blank)."""
        return bytes(self.pending).rstrip(b"\r") if self.pending.strip() else None


async def bounded_lines(pieces: AsyncIterable[bytes], max_line: int) -> AsyncIterator[bytes]:
    """Each line of the byte stream, without its newline or a trailing CR, as soon as its newline
    arrives; a last line without a newline comes at the end unless it is blank.

    Raises LineTooLong as soon as a line holds more than `max_line` bytes (its CR included).
    """
    splitter = LineSplitter(max_line)
    async for piece in pieces:
        for line in splitter.feed(piece):
            yield line
    if (last := splitter.rest()) is not None:
        yield last
