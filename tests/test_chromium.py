"""The shared Chromium: each test that asks for it gets it as a new one would be."""
from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator

import pytest

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, shared_chromium

pytestmark = [
    pytest.mark.backend_free,
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
]


@pytest.fixture
def site(tmp_path) -> Iterator[str]:
    """A page titled "page", served on a free port until the test ends."""
    (tmp_path / "index.html").write_text("<!doctype html><title>page</title><p>page</p>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_it_hands_the_next_test_a_browser_without_the_last_ones_state(site):
    driver = shared_chromium(height=900)
    driver.get(site + "/")
    driver.add_cookie({"name": "sessionid", "value": "earlier-test"})
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": "window.injected = 1;"})
    driver.execute_script("console.error('from the earlier test')")
    driver.switch_to.new_window("window")

    again = shared_chromium(height=700)
    assert again is driver  # the same browser, not a new start
    assert len(again.window_handles) == 1
    again.get(site + "/")
    assert again.get_cookies() == []
    assert again.execute_script("return window.injected === undefined")
    assert again.execute_script("return window.innerHeight") < 700
    assert not [e for e in again.get_log("browser") if "from the earlier test" in e["message"]]


def test_it_starts_a_new_one_when_a_test_quit_it(site):
    shared_chromium().quit()
    driver = shared_chromium()
    driver.get(site + "/")
    assert driver.title == "page"
