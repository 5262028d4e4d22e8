import random

import pytest

from runs.core.downsample import bucket_count, keep

pytestmark = pytest.mark.backend_free


def test_it_keeps_every_row_when_they_fit():
    rows = [(float(i),) for i in range(10)]
    assert keep(rows, 10) == list(range(10))


def test_it_never_keeps_more_than_max_points():
    rng = random.Random(1)
    rows = [(rng.random(), rng.random(), None if i % 7 else rng.random()) for i in range(10_000)]
    kept = keep(rows, 2000)
    assert len(kept) <= 2000
    assert kept == sorted(set(kept))
    assert kept[0] == 0 and kept[-1] == 9999


def test_it_keeps_each_buckets_min_and_max_of_every_field():
    rng = random.Random(2)
    rows = [(rng.random(), rng.random()) for _ in range(1000)]
    kept = set(keep(rows, 102))
    buckets = bucket_count(102, 2)
    assert buckets == 25
    for b in range(buckets):
        span = range(b * 1000 // buckets, (b + 1) * 1000 // buckets)
        for f in (0, 1):
            values = [rows[i][f] for i in span]
            assert span[values.index(min(values))] in kept
            assert span[values.index(max(values))] in kept


def test_it_keeps_a_lone_spike():
    rows = [(1.0,)] * 5000
    rows = [*rows[:3333], (99.0,), *rows[3334:]]
    assert 3333 in keep(rows, 100)


def test_it_ignores_missing_values():
    rows = [(None,)] * 500 + [(2.0,), (1.0,)] + [(None,)] * 498
    kept = keep(rows, 10)
    assert {500, 501} <= set(kept)
    assert len(kept) == 4
