import pytest

from runs.core.jsonlimits import MAX_JSON_DEPTH, TooDeep, check_depth, loads

pytestmark = pytest.mark.backend_free


def _nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def test_it_reads_json_up_to_the_limit():
    assert loads(_nested(MAX_JSON_DEPTH)) is not None
    assert loads(b'{"a": [1, {"b": "]]]]"}]}') == {"a": [1, {"b": "]]]]"}]}


@pytest.mark.parametrize("text", [_nested(MAX_JSON_DEPTH + 1), _nested(1_000_000), '{"a":' * 100_000])
def test_it_refuses_json_nested_past_the_limit_with_the_limit(text):
    with pytest.raises(TooDeep) as refused:
        loads(text)
    assert str(refused.value) == f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep (the limit)"


def test_it_counts_no_bracket_inside_a_string():
    text = '["' + "[" * 1000 + '\\"' + "{" * 1000 + '"]'
    assert loads(text) == ["[" * 1000 + '"' + "{" * 1000]


def test_it_refuses_a_parsed_value_nested_past_the_limit_without_recursing():
    value: object = 1
    for _ in range(100_000):
        value = {"k": [value]}
    with pytest.raises(TooDeep):
        check_depth(value)
    check_depth([[1]] * 3, max_depth=2)
    with pytest.raises(TooDeep):
        check_depth([[[]]], max_depth=2)


def test_it_reads_malformed_text_as_a_value_error():
    with pytest.raises(ValueError):
        loads("[[[1")
