"""The backend_free mark: a test without it runs on both backends; one with it is checked, not trusted."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.backend_free

MARKED_WRONG = '''
import pytest
from django.test import TransactionTestCase

pytestmark = pytest.mark.backend_free

@pytest.mark.django_db
def test_marked_and_django_db():
    pass

def test_asks_for_the_database(transactional_db):
    pass

class PageTest(TransactionTestCase):
    def test_a_page(self):
        pass
'''

REACHES_A_BACKEND = '''
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from sparkdash.celery import app
from engines.models import Machine

pytestmark = pytest.mark.backend_free

def test_reaches_the_channel_layer():
    async_to_sync(get_channel_layer().group_send)("runs", {"type": "x"})

def test_sends_a_celery_task():
    app.send_task("runs.execute", args=[1])

def test_reads_the_database():
    Machine.objects.count()

def test_plain_python():
    assert sum([1, 2]) == 3
'''

UNMARKED = '''
def test_new_and_unmarked():
    pass
'''


def pytest_in(folder: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest, with the suite's settings and plugins, over `source` written to a test file in `folder`."""
    (folder / "test_case.py").write_text(source)
    env = os.environ | {"PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "sparkdash.settings"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.backends", "-p", "no:cacheprovider", "--rootdir",
         str(folder), "-c", os.devnull, "-q", *args, str(folder / "test_case.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_it_stops_the_collection_naming_each_marked_test_that_asks_for_the_database(tmp_path):
    done = pytest_in(tmp_path, MARKED_WRONG)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "marked backend_free but needs a backend" in said
    assert "test_marked_and_django_db: it is marked django_db" in said
    assert "test_asks_for_the_database: it uses the fixture(s) transactional_db" in said
    assert "PageTest is a Django TransactionTestCase" in said


def test_it_fails_a_marked_test_that_reaches_a_backend_at_run_time(tmp_path):
    done = pytest_in(tmp_path, REACHES_A_BACKEND, "-rA")
    said = done.stdout
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, said + done.stderr
    assert "3 failed, 1 passed" in said
    assert "reached the channel layer" in said
    assert "reached Celery" in said
    assert "Database access not allowed" in said


def test_it_counts_an_unmarked_test_as_backend_dependent(tmp_path):
    """The embedded pass selects `not backend_free`: a new test without a mark runs there too."""
    done = pytest_in(tmp_path, UNMARKED, "-m", "not backend_free")
    assert "1 passed" in done.stdout, done.stdout + done.stderr
    done = pytest_in(tmp_path, UNMARKED, "-m", "backend_free")
    assert "1 deselected" in done.stdout, done.stdout + done.stderr


NEEDS_LLAMA_SERVER = '''
import pytest
from tests.real_engine import requires_engine

@requires_engine
def test_on_the_real_engine():
    pass

class TestOnTheRealEngine:
    pytestmark = requires_engine

    def test_in_a_class(self):
        pass

@pytest.mark.skipif(False, reason="another reason")
def test_on_the_simulator():
    pass
'''


def test_it_marks_each_test_that_needs_the_real_llama_server_so_ci_runs_it_once(tmp_path):
    """`make test-llama` selects `llama_server`; CI's two backend passes leave it out (CI_SPLIT)."""
    args = ("-p", "tests.real_engine", "--strict-markers", "-o", "markers=llama_server")
    done = pytest_in(tmp_path, NEEDS_LLAMA_SERVER, *args, "-m", "llama_server", "--collect-only")
    assert "2/3 tests collected (1 deselected)" in done.stdout, done.stdout + done.stderr
    done = pytest_in(tmp_path, NEEDS_LLAMA_SERVER, *args, "-m", "not llama_server", "--collect-only")
    assert "test_on_the_simulator" in done.stdout and "1/3 tests collected" in done.stdout, done.stdout


BACKEND_FREE_AND_NOT = '''
import pytest

@pytest.mark.backend_free
def test_plain_python():
    pass

def test_on_the_backends():
    pass
'''


@pytest.mark.parametrize(("folder", "moved"), [("tests/traffic", True), ("tests/runs", False)])
def test_it_moves_the_backend_free_tests_of_some_folders_to_cis_backend_pass(tmp_path, folder, moved):
    """CI_SPLIT's embedded pass leaves `backend_pass` out; its backend pass takes it (Makefile marks)."""
    where = tmp_path / folder
    where.mkdir(parents=True)
    args = ("--strict-markers", "-o", "markers=backend_free\nbackend_pass\nllama_server", "--collect-only")
    embedded = pytest_in(where, BACKEND_FREE_AND_NOT, *args, "-m", "not llama_server and not backend_pass")
    backends = pytest_in(
        where, BACKEND_FREE_AND_NOT, *args, "-m", "(not backend_free or backend_pass) and not llama_server"
    )
    assert ("test_plain_python" in embedded.stdout) is not moved, embedded.stdout + embedded.stderr
    assert ("test_plain_python" in backends.stdout) is moved, backends.stdout + backends.stderr
    assert "test_on_the_backends" in embedded.stdout and "test_on_the_backends" in backends.stdout
