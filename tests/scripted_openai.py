"""A scripted OpenAI-compatible chat server on a real socket, for libraries that bring their own HTTP.

lm-eval (requests) and EvalPlus (the openai SDK) cannot be pointed at an httpx mock transport, so
their tests talk to this: each POST to /v1/chat/completions is answered by `answer(body)`: the
answer's content, or a Reply (a reasoning model's reasoning_content beside it, a finish reason).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: content (None: none, e.g. all reasoning), reasoning, finish reason."""

    content: str | None
    reasoning_content: str = ""
    finish_reason: str = "stop"

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning_content:
            message["reasoning_content"] = self.reasoning_content
        return message

    def tokens(self) -> int:
        return len(f"{self.reasoning_content} {self.content or ''}".split())


Answer = Callable[[dict[str, Any]], "str | Reply"]


class ScriptedChat:
    """The server's URL and every request body it received."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bodies: list[dict[str, Any]] = []


def _handler(chat: ScriptedChat, answer: Answer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            chat.bodies.append(body)
            scripted = answer(body)
            said = scripted if isinstance(scripted, Reply) else Reply(scripted)
            reply = {
                "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "finish_reason": said.finish_reason, "message": said.message()}],
                "usage": {"prompt_tokens": 10, "completion_tokens": said.tokens(),
                          "total_tokens": 10 + said.tokens()},
            }
            self._send(200, reply)

        def do_GET(self) -> None:
            # The model list a run's provenance asks for; nothing else (no /metrics, /props).
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found", "code": 404}})

        def _send(self, status: int, reply: dict[str, Any]) -> None:
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def scripted_chat(answer: Answer) -> Iterator[ScriptedChat]:
    """Serve `answer` on a free local port for the duration of the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ScriptedChat(""), answer))
    chat = ScriptedChat(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(chat, answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield chat
    finally:
        server.shutdown()
        server.server_close()
