"""bin/stages.sh, .ci/run's timer: each stage's wall time as it ends, and the table of all at exit."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

STAGES = Path(__file__).resolve().parent.parent / "bin" / "stages.sh"

pytestmark = pytest.mark.backend_free


def ci(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """A CI script of `body` lines using bin/stages.sh as .ci/run does."""
    script = f"""set -euo pipefail
source {STAGES}
trap 'status=$?; stop_background; stage_table; exit $status' EXIT
{body}
"""
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "STAGES_DIR": str(tmp_path / "logs")})


def table(out: str) -> list[tuple[str, int, str]]:
    rows = out.split("== stages (wall time", 1)[1].splitlines()[1:]
    matched = [re.match(r"(.+?)\s+(\d+) s\s*(.*)", row) for row in rows]
    return [(m[1].strip(), int(m[2]), m[3].strip()) for m in matched if m]


def test_it_prints_each_stages_time_as_it_ends_and_a_table_at_the_end(tmp_path):
    done = ci(tmp_path, """
start "slow one (beside)" sleep 2
stage "quick one" sleep 1
finish "slow one (beside)"
stage "last" true
""")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    quick, slow = "== quick one: ended after 1 s, ok", "== slow one (beside): ended after 2 s, ok"
    assert out.index(quick) < out.index(slow)
    assert table(out) == [
        ("quick one", 1, "ok"), ("slow one (beside)", 2, "ok"), ("last", 0, "ok"), ("total", 2, ""),
    ]
    assert (tmp_path / "logs" / "slow_one.log").exists()


def test_it_times_a_background_stage_to_its_own_end_not_to_the_wait_for_it(tmp_path):
    done = ci(tmp_path, """
start "short one" true
stage "long one" sleep 2
finish "short one"
""")
    assert done.returncode == 0, done.stderr
    assert table(done.stdout)[:2] == [("long one", 2, "ok"), ("short one", 0, "ok")]


def test_it_fails_on_a_failed_stage_and_still_prints_the_table(tmp_path):
    done = ci(tmp_path, """
start "beside" sh -c 'echo its output; exit 3'
stage "first" true
finish "beside"
stage "never reached" true
""")
    assert done.returncode == 1
    assert "== beside: its output\nits output\n== beside: ended after 0 s, FAILED (exit 3)" in done.stdout
    assert [name for name, _, _ in table(done.stdout)] == ["first", "beside", "total"]


def test_it_stops_what_ran_beside_a_failed_stage(tmp_path):
    done = ci(tmp_path, """
start "beside" sh -c 'sh -c "sleep 30; touch grandchild-survived"; touch child-survived'
stage "failing" false
""")
    assert done.returncode == 1
    assert table(done.stdout)[0] == ("failing", 0, "FAILED (exit 1)")
    assert table(done.stdout)[-1][1] < 5  # it did not wait for the 30 s beside it
    assert not subprocess.run(["pgrep", "-f", "sleep 30; touch grandchild"], capture_output=True).stdout
    assert not list(tmp_path.glob("*-survived"))
