import pytest

from engines.ids import MAX_KEY, parse_key

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize(("text", "key"), [("1", 1), (" 42 ", 42), (str(MAX_KEY), MAX_KEY)])
def test_it_reads_a_key(text, key):
    assert parse_key(text) == key


@pytest.mark.parametrize("text", ["", "0", "-1", "1.5", "abc", "١٢", str(MAX_KEY + 1), "9" * 5000, "²"])
def test_it_reads_no_key_from_what_no_row_can_have(text):
    assert parse_key(text) is None
