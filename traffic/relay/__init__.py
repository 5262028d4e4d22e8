"""The recording relay's core: plain async Python with no Django import, testable alone.

A relay listens with two fronts (the Ollama API and the OpenAI API), forwards each request to
one upstream engine (Ollama's own API, or the OpenAI-compatible API of llama-server, vLLM and
SGLang), streams the answer back chunk by chunk in the client's format, and hands one
`TrafficRecord` per request to a sink that must never block.
"""
from .app import RelayApp, build_relay
from .gate import Admission, Gate, open_gate
from .record import ToolCall, TrafficRecord, new_key
from .server import RelayServer, bind, serve_forever
from .upstream import Limits, Upstream

__all__ = [
    "Admission", "Gate", "Limits", "RelayApp", "RelayServer", "ToolCall", "TrafficRecord", "Upstream", "bind",
    "build_relay", "new_key", "open_gate", "serve_forever",
]
