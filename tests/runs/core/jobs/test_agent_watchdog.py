import pytest

from runs.core.jobs.agent_table import load_fixture
from runs.core.jobs.agent_table.tools import Workspace
from runs.core.jobs.agent_table.watchdog import UNAVAILABLE_NOTE, WITHDRAWN_NOTE, ReadWatchdog

pytestmark = pytest.mark.backend_free


def read_n(watchdog, n, file="server.py"):
    return [watchdog.on_call(file) for _ in range(n)]


def test_it_runs_the_first_eleven_reads_without_a_note():
    decisions = read_n(ReadWatchdog(), 11)
    assert all(d.execute and d.note is None for d in decisions)
    assert [d.reads for d in decisions] == list(range(1, 12))


def test_it_notes_every_read_from_the_twelfth_on():
    watchdog = ReadWatchdog()
    read_n(watchdog, 11)
    twelfth, thirteenth = read_n(watchdog, 2)
    assert twelfth.execute and "read server.py 12 times" in twelfth.note
    assert "answer from what you have read" in twelfth.note
    assert thirteenth.execute and "13 times" in thirteenth.note
    assert watchdog.tools_offered


def test_it_withdraws_the_tools_at_the_twentieth_read_without_running_it():
    watchdog = ReadWatchdog()
    *_, nineteenth, twentieth = read_n(watchdog, 20)
    assert nineteenth.execute and watchdog.reads["server.py"] == 20
    assert not twentieth.execute and twentieth.reads == 20
    assert "read number 20 of server.py" in twentieth.note and "withdrawn" in twentieth.note
    assert not watchdog.tools_offered


def test_it_refuses_the_later_calls_of_the_reply_that_withdrew_the_tools():
    watchdog = ReadWatchdog()
    read_n(watchdog, 20)
    later = [watchdog.on_call("other.py"), watchdog.on_call(None)]
    assert [(d.execute, d.note) for d in later] == [(False, WITHDRAWN_NOTE)] * 2
    assert watchdog.reads["other.py"] == 0


def test_it_counts_each_file_apart_and_skips_calls_that_read_no_file():
    watchdog = ReadWatchdog()
    read_n(watchdog, 11, "a.py")
    assert read_n(watchdog, 1, "b.py")[0].note is None
    assert watchdog.on_call(None) == watchdog.on_call(None)
    assert watchdog.on_call(None).execute and watchdog.on_call(None).reads == 0
    assert "a.py 12 times" in watchdog.on_call("a.py").note
    assert watchdog.max_reads() == 12


def test_it_takes_its_thresholds_as_parameters():
    watchdog = ReadWatchdog(note_at=2, withdraw_at=3)
    first, second, third = read_n(watchdog, 3)
    assert (first.note, second.execute, third.execute) == (None, True, False)
    assert second.note is not None


def test_it_allows_one_more_request_after_a_tool_call_without_tools():
    watchdog = ReadWatchdog()
    assert watchdog.on_reply_without_tools(has_tool_calls=False) == "answer"
    assert watchdog.on_reply_without_tools(has_tool_calls=True) == "retry"
    assert watchdog.on_reply_without_tools(has_tool_calls=False) == "answer"
    assert watchdog.on_reply_without_tools(has_tool_calls=True) == "stop"
    assert "unavailable" in UNAVAILABLE_NOTE


@pytest.mark.parametrize(
    ("name", "arguments", "file"),
    [
        ("read_file", {"path": "server.py", "start_line": 1, "end_line": 50}, "server.py"),
        ("read_file", {"path": "./server.py", "start_line": 400}, "server.py"),
        ("search", {"pattern": "method ==", "path": "server.py"}, "server.py"),
        ("search", {"pattern": "def ", "path": " server.py "}, "server.py"),
        ("search", {"pattern": "method =="}, "server.py"),
        ("search", {"pattern": "method ==", "path": "."}, "server.py"),
        ("search", {"pattern": "method ==", "path": "./"}, "server.py"),
        ("search", {"pattern": "x", "path": "nowhere.py"}, None),
        ("read_file", {"path": "nowhere.py"}, "nowhere.py"),
        ("read_file", None, None),
        ("list_files", {"path": "server.py"}, None),
    ],
)
def test_it_counts_reads_and_searches_naming_a_file_whatever_the_range_or_pattern(name, arguments, file):
    workspace = Workspace(load_fixture("routes_47").root)
    assert workspace.file_read_by(name, arguments) == file


def test_it_counts_no_file_for_a_search_over_a_workspace_of_several_files(tmp_path):
    for name in ("app.py", "lib/util.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    workspace = Workspace(tmp_path)
    assert workspace.file_read_by("search", {"pattern": "x"}) is None
    assert workspace.file_read_by("search", {"pattern": "x", "path": "."}) is None
    assert workspace.file_read_by("search", {"pattern": "x", "path": "lib"}) == "lib/util.py"


def test_it_reports_an_intervention_from_the_read_note_on():
    watchdog = ReadWatchdog()
    read_n(watchdog, 11)
    assert not watchdog.intervened
    read_n(watchdog, 1)
    assert watchdog.intervened and watchdog.tools_offered
