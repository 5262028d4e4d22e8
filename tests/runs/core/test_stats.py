from runs.core.stats import summarize, summarize_rows


def test_it_reports_median_min_max_and_n():
    assert summarize([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0, "n": 4}


def test_it_skips_missing_values():
    assert summarize([None, 4.0, None]) == {"median": 4.0, "min": 4.0, "max": 4.0, "n": 1}


def test_it_returns_none_when_nothing_was_measured():
    assert summarize([None, None]) is None
    assert summarize([]) is None


def test_it_summarizes_each_key_of_rows():
    rows = [{"a": 1, "b": None}, {"a": 3, "b": None}]
    expected = {"a": {"median": 2.0, "min": 1.0, "max": 3.0, "n": 2}, "b": None}
    assert summarize_rows(rows, ["a", "b"]) == expected
