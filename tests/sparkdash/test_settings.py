"""The settings as a user meets them: production's deploy check, and `make run`'s environment with
no variable set (DEBUG off, a private key kept outside the repository, plain HTTP on 127.0.0.1, and
error pages that show no traceback and no setting)."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sparkdash.secretkey import PUBLIC_KEYS
from tests.processes import stop_process
from tests.real_engine import free_port

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
# The variables tests/__init__.py sets for the test session; a user's shell has none of them.
SESSION_ONLY = ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "HTTPS", "DJANGO_SETTINGS_MODULE")


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean | env, capture_output=True, text=True,
        timeout=120,
    )


def bare_env(home: Path, **more: str) -> dict[str, str]:
    """What `env -i PATH=... HOME=...` leaves: no variable of SparkDash's set."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), **more}


def test_it_passes_the_deploy_check_with_production_settings(tmp_path):
    key = tmp_path / "secret_key"
    key.write_text("k" + "".join(chr(33 + (i * 7) % 90) for i in range(60)))
    done = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="False", SECRET_KEY_FILE=str(key),
                  SPARKDASH_VAR_DIR=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


@pytest.mark.parametrize("key", sorted(PUBLIC_KEYS - {""}))
def test_it_refuses_to_start_with_debug_off_and_a_published_secret_key(tmp_path, key):
    done = manage("check", SECRET_KEY=key, SPARKDASH_VAR_DIR=str(tmp_path), HOME=str(tmp_path))
    assert done.returncode != 0
    assert "SECRET_KEY is a published example value: set a long random one" in done.stderr


SHOW = "from django.conf import settings as s; print(s.DEBUG, s.SECURE_SSL_REDIRECT, repr(s.SECRET_KEY))"


def _settings_as_make_run(home: Path, var: Path) -> list[str]:
    serve = _make_run_lines(home)[-1]
    env = bare_env(home, SPARKDASH_VAR_DIR=str(var)) | _assignments(serve)
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", SHOW], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()


def _make_run_lines(home: Path) -> list[str]:
    """`make run`'s commands, as make would run them in a bare environment (the venv taken as built)."""
    done = subprocess.run(["make", "-n", "-o", ".venv/.installed", "run"], cwd=ROOT, env=bare_env(home),
                          capture_output=True, text=True, timeout=60, check=True)
    return [line for line in done.stdout.splitlines() if "manage.py" in line]


def _assignments(line: str) -> dict[str, str]:
    """The VAR=value words a command line starts with."""
    return dict(re.findall(r"(?:^|\s)([A-Z_]+)=(\S+)(?=\s)", line.split("manage.py")[0]))


def test_it_runs_make_run_with_debug_off_and_a_private_key_kept_outside_the_repository(tmp_path):
    debug, redirect, key = _settings_as_make_run(tmp_path, tmp_path / "var")
    assert (debug, redirect) == ("False", "False")
    stored = tmp_path / ".config" / "sparkdash" / "secret_key"
    assert key.strip("'") == stored.read_text().strip()
    assert key.strip("'") not in PUBLIC_KEYS and len(key) > 50
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    # Generated once: the next start uses the same key.
    assert _settings_as_make_run(tmp_path, tmp_path / "var")[2] == key


def test_it_serves_make_run_on_loopback_only(tmp_path):
    serve = _make_run_lines(tmp_path)[-1]
    assert "--host 127.0.0.1" in serve
    told = subprocess.run(["make", "-n", "-o", ".venv/.installed", "run"], cwd=ROOT, check=True,
                          env=bare_env(tmp_path, HOST="0.0.0.0"), capture_output=True, text=True, timeout=60)
    assert "--host 0.0.0.0" in told.stdout


@pytest.fixture(scope="module")
def make_run_server(tmp_path_factory) -> Iterator[tuple[httpx.Client, Path]]:
    """The dashboard as `make run` serves it (its environment, no variable set; the simulator off so
    the test needs no fixed port), with a superuser `root` logged in; its client and HOME."""
    tmp_path = tmp_path_factory.mktemp("make-run-home")
    port, var = free_port(), tmp_path / "var"
    env = bare_env(tmp_path, SPARKDASH_VAR_DIR=str(var)) | _assignments(_make_run_lines(tmp_path)[-1])
    python = [sys.executable, "manage.py"]
    subprocess.run([*python, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)
    admin = env | {"DJANGO_SUPERUSER_USERNAME": "root", "DJANGO_SUPERUSER_PASSWORD": "a-Long-pass-42",
                   "DJANGO_SUPERUSER_EMAIL": "root@example.com"}
    subprocess.run([*python, "createsuperuser", "--noinput"], cwd=ROOT, env=admin, check=True, timeout=120,
                   capture_output=True)
    serve = [*python, "serve", "--host", "127.0.0.1", "--port", str(port), "--sim-port", "0"]
    server = subprocess.Popen(serve, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            _wait_until_up(client)
            _log_in(client, "root", "a-Long-pass-42")
            yield client, tmp_path
    finally:
        stop_process(server)


def _wait_until_up(client: httpx.Client) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            client.get("/login/")
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _log_in(client: httpx.Client, username: str, password: str) -> None:
    client.get("/login/")
    data = {"username": username, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"]}
    response = client.post("/login/", data=data)
    assert response.status_code == 302, response.text[:500]


def _shows_nothing_secret(response: httpx.Response, home: Path) -> None:
    key = (home / ".config" / "sparkdash" / "secret_key").read_text().strip()
    for word in ("Traceback", "SECRET_KEY", "DATABASES", "settings.py", str(home), key):
        assert word not in response.text, word


def test_it_shows_no_traceback_and_no_setting_where_make_run_serves(make_run_server):
    client, home = make_run_server
    bad_host = client.get("/runs/1/", headers={"Host": "attacker.example"})
    assert bad_host.status_code == 400 and "Bad request (400)" in bad_host.text
    overflow = client.get("/runs/?config=99999999999999999999999")
    assert overflow.status_code == 200
    assert client.get("/runs/99999999999999999999999/").status_code == 404
    unknown = client.get("/api/runs/99999")
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "not found: no such object, or not one you may see"}
    too_big = client.post("/api/runs/1", content=b"x" * (6 * 1024 * 1024 + 1))
    assert too_big.status_code == 413 and "the limit is 6,291,456 bytes" in too_big.json()["error"]
    for response in (bad_host, overflow, unknown, too_big):
        _shows_nothing_secret(response, home)


def test_it_serves_styled_pages_with_their_policies_where_make_run_serves(make_run_server):
    client, _ = make_run_server
    home = client.get("/")
    assert home.status_code == 200
    assert "script-src 'self'" in home.headers["content-security-policy"]
    assert "camera=()" in home.headers["permissions-policy"]
    assert "strict-transport-security" not in home.headers
    for sheet in re.findall(r'<link rel="stylesheet" href="([^"]+)"', home.text):
        assert client.get(sheet).status_code == 200, sheet
