"""`make bench-peers`' cold start for every tool (tests/bench/peer_slots.py), against a stand-in engine."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.bench import peer_slots, peers

pytestmark = pytest.mark.backend_free

TIMING = "slot print_timing: id 0 | task 1 | prompt eval time =       1.00 ms /    10 tokens\n"


@contextmanager
def engine(log: Path, logs: bool = True) -> Iterator[tuple[str, list[dict]]]:
    """An engine that answers every chat request and, where `logs`, logs its timing as llama-server does."""
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            if logs:
                with log.open("a") as f:
                    f.write(TIMING)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: object) -> None:  # the base class names it
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", bodies
    finally:
        server.shutdown()


def test_it_fills_every_slot_with_a_prompt_no_tool_sends_and_waits_for_their_timings(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(TIMING)  # an earlier tool's request
    with engine(log) as (url, bodies):
        peer_slots.cool(url, log, 16)
    prompts = [b["messages"][-1]["content"] for b in bodies]
    assert len(prompts) == len(set(prompts)) == 16
    assert peers._prompt_text() not in prompts and all(len(p.split()) == peer_slots.WORDS for p in prompts)
    assert all(b["max_tokens"] == 1 for b in bodies)
    assert log.read_text().count(peer_slots.PROMPT_EVAL) == 17


def test_it_refuses_to_go_on_when_the_engine_never_logs_the_fillers(tmp_path, monkeypatch):
    monkeypatch.setattr(peer_slots, "_LOGGED_S", 0.2)
    log = tmp_path / "engine.log"
    log.write_text("")
    with engine(log, logs=False) as (url, _), pytest.raises(RuntimeError, match="did not log"):
        peer_slots.cool(url, log, 2)
