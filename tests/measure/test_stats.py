import itertools
import random
import statistics
from collections import Counter

import numpy as np
import pytest

from measure import stats
from measure.stats import interval, percentile, summarize, summarize_rows

pytestmark = pytest.mark.backend_free

OLD_KEYS = ("median", "min", "max", "n")


def _old(spread):
    return {k: spread[k] for k in OLD_KEYS}


def test_it_reports_median_min_max_and_n():
    assert _old(summarize([3.0, 1.0, 2.0, 10.0])) == {"median": 2.5, "min": 1.0, "max": 10.0, "n": 4}


def test_it_skips_missing_values():
    assert _old(summarize([None, 4.0, None])) == {"median": 4.0, "min": 4.0, "max": 4.0, "n": 1}


def test_it_returns_none_when_nothing_was_measured():
    assert summarize([None, None]) is None
    assert summarize([]) is None


def test_it_summarizes_each_key_of_rows():
    rows = [{"a": 1, "b": None}, {"a": 3, "b": None}]
    got = summarize_rows(rows, ["a", "b"])
    assert _old(got["a"]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 2}
    assert got["b"] is None


def test_it_takes_nearest_rank_percentiles():
    # Rank ceil(p/100 x n): of 1..100 the 90th value and the 99th; of 1..18 the 17th (16.2 up).
    hundred = summarize(float(v) for v in range(1, 101))
    assert (hundred["p90"], hundred["p99"]) == (90.0, 99.0)
    assert not hundred["p90_is_max"] and not hundred["p99_is_max"]
    eighteen = summarize(float(v) for v in range(1, 19))
    assert eighteen["p90"] == 17.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0


def test_it_flags_a_p99_of_18_values_as_the_max():
    spread = summarize(float(v) for v in range(18, 0, -1))
    assert spread["p99"] == spread["max"] == 18.0
    assert spread["p99_is_max"] is True
    assert spread["p99_ci"] is None
    assert spread["p90_is_max"] is False and spread["p90_ci"] is not None


def test_it_flags_a_p90_below_10_values_and_not_from_10():
    assert summarize(float(v) for v in range(9))["p90_is_max"] is True
    ten = summarize(float(v) for v in range(10))
    assert ten["p90_is_max"] is False
    assert ten["p90"] == 8.0  # rank 9 of 0..9


def test_it_gives_one_value_no_interval():
    spread = summarize([4.0])
    assert spread["median_ci"] is None
    assert spread["p90_is_max"] and spread["p99_is_max"]
    assert interval(spread) == (4.0, 4.0)


def test_it_gives_the_same_interval_for_the_same_values_in_any_order():
    g = random.Random(7)
    values = [g.gauss(40, 3) for _ in range(200)]
    first = summarize(values)
    again = summarize(reversed(values))
    assert first == again
    assert first["median_ci"] != [first["min"], first["max"]]


def test_it_puts_the_median_inside_its_interval_and_the_interval_inside_the_range():
    g = random.Random(11)
    for n in (2, 3, 7, 30, 500):
        spread = summarize(g.lognormvariate(3, 0.4) for _ in range(n))
        low, high = spread["median_ci"]
        assert spread["min"] <= low <= spread["median"] <= high <= spread["max"]


def test_it_gives_three_values_their_range_as_interval():
    # A resample of 1, 2, 3 has median 1 with probability 7/27, well above 2.5 %.
    assert summarize([2.0, 1.0, 3.0])["median_ci"] == [1.0, 3.0]


def test_it_narrows_the_interval_as_values_grow():
    g = random.Random(3)
    many = [g.gauss(100, 10) for _ in range(1000)]
    spread = summarize(many)
    low, high = spread["median_ci"]
    assert high - low < 3  # about 2 x 1.96 x 1.25 x 10 / sqrt(1000) = 1.55
    p99_low, p99_high = spread["p99_ci"]
    assert p99_low <= spread["p99"] <= p99_high


def test_it_draws_resample_medians_as_often_as_resampling_does():
    # Every one of the 4^4 resamples of four values, against the one-draw shortcut.
    values = [1.0, 2.0, 4.0, 8.0]
    exact = Counter(statistics.median(r) for r in itertools.product(values, repeat=4))
    drawn = Counter(stats._median_draws(np.random.default_rng(1), 20000, values).tolist())
    for median, count in exact.items():
        assert drawn[median] / 20000 == pytest.approx(count / 256, abs=0.01)


def test_it_draws_a_resample_maximum_as_often_as_resampling_does():
    values = [1.0, 2.0, 3.0]
    exact = Counter(max(r) for r in itertools.product(values, repeat=3))
    drawn = Counter(stats._order_draws(np.random.default_rng(2), 20000, values, 3).tolist())
    for top, count in exact.items():
        assert drawn[top] / 20000 == pytest.approx(count / 27, abs=0.01)


def test_it_falls_back_to_the_range_for_a_stored_spread_without_interval():
    assert interval({"median": 5.0, "min": 1.0, "max": 9.0, "n": 3}) == (1.0, 9.0)
    assert interval({"median": 5.0, "min": 1.0, "max": 9.0, "n": 3, "median_ci": [4.0, 6.0]}) == (4.0, 6.0)
