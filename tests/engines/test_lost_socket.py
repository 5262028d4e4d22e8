"""A connection uvloop lost as it opened is httpx's ConnectError; any other AttributeError is a bug.

The race itself, against a listener that resets connections, is met in test_client_base.py and in
the relay's test_upstream.py: it comes a few times in a hundred, and not at all under some loads.
"""
from __future__ import annotations

import httpx
import pytest

from engines.clients import lost_socket

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize("attribute", ["family", "getsockname", "getpeername"])
def test_it_raises_a_connect_error_for_what_anyio_asks_of_a_lost_socket(attribute: str) -> None:
    with pytest.raises(httpx.ConnectError, match="the connection closed as it opened") as caught, \
            lost_socket.as_connect_error():
        getattr(None, attribute)
    assert isinstance(caught.value.__cause__, AttributeError)


def test_it_lets_any_other_attribute_error_through() -> None:
    with pytest.raises(AttributeError, match="'object' object has no attribute 'getpeername'"), \
            lost_socket.as_connect_error():
        object().getpeername()  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'recv'"), \
            lost_socket.as_connect_error():
        None.recv()  # type: ignore[attr-defined]
