"""The engine's log as its relay follows it: from the end, only the cache-discard lines, across files."""
from __future__ import annotations

from pathlib import Path

import pytest

from traffic.engine_log import EngineLogWatch

pytestmark = pytest.mark.backend_free

DISCARD = ("0.09.236.941 W srv  alloc:  - prompt state size 29.351 MiB exceeds cache size limit 4.000 MiB,"
           " skipping")


def append(path: Path, *lines: str) -> None:
    with path.open("a") as log:
        log.writelines(line + "\n" for line in lines)


def test_it_reads_only_the_discards_written_after_it_began_following(tmp_path):
    log = tmp_path / "engine.log"
    append(log, DISCARD)  # before the relay started: not this relay's to report
    watch = EngineLogWatch()
    watch.follow(str(log))
    assert watch.cache_discards() == []
    append(log, "srv  update_slots: all slots are idle", DISCARD)
    assert watch.cache_discards() == [DISCARD]
    assert watch.cache_discards() == []  # each line once


def test_it_waits_for_a_log_that_does_not_exist_yet_and_reads_a_rotated_one_from_its_start(tmp_path):
    log = tmp_path / "engine.log"
    watch = EngineLogWatch()
    watch.follow(str(log))
    append(log, DISCARD, DISCARD)
    assert watch.cache_discards() == [DISCARD, DISCARD]
    log.write_text("")  # rotated
    append(log, DISCARD)
    assert watch.cache_discards() == []  # the shrink is noticed first...
    assert watch.cache_discards() == [DISCARD]  # ...then the new file is read from its start


def test_it_switches_files_when_the_engine_changes_and_reads_nothing_without_one(tmp_path):
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    watch = EngineLogWatch()
    assert watch.cache_discards() == []
    watch.follow(str(first))
    append(first, DISCARD)
    watch.follow(str(first))  # the same engine again keeps its place
    append(second, DISCARD)
    watch.follow(str(second))
    append(second, DISCARD)
    assert watch.cache_discards() == [DISCARD]
    watch.follow("")
    assert watch.cache_discards() == []
