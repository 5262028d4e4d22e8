import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE")}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean | env, capture_output=True, text=True,
        timeout=120,
    )


def test_it_passes_the_deploy_check_with_production_settings(tmp_path):
    key = tmp_path / "secret_key"
    key.write_text("k" + "".join(chr(33 + (i * 7) % 90) for i in range(60)))
    done = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="False", SECRET_KEY_FILE=str(key),
                  SPARKDASH_VAR_DIR=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_it_refuses_to_start_in_production_without_a_secret_key(tmp_path):
    done = manage("check", DEBUG="False", SPARKDASH_VAR_DIR=str(tmp_path))
    assert done.returncode != 0
    assert "SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG=False" in done.stderr
