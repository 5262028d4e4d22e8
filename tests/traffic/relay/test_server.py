"""Serving the relay on sockets bound beforehand: one app on several ports, stopped on exit."""
from __future__ import annotations

import httpx
import pytest

from traffic.relay import RelayServer, Upstream, bind, build_relay

pytestmark = pytest.mark.backend_free


def test_it_serves_one_relay_on_several_sockets() -> None:
    app = build_relay(lambda: Upstream("http://127.0.0.1:1", "ollama"), lambda record: None)
    with RelayServer(app, [bind("127.0.0.1", 0), bind("127.0.0.1", 0)]) as server:
        assert len(set(server.urls)) == 2 and server.url == server.urls[0]
        assert [httpx.get(url).text for url in server.urls] == ["Ollama is running"] * 2
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url)
