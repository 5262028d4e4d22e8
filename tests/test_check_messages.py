"""bin/check-messages, the translation check in `make lint`, fails on what a translator must fix."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CODE = ("manage.py", "bin", "sparkdash", "claims", "engines", "measure", "runs", "teams", "traffic",
        "templates", "static", "locale")
CATALOGUE = Path("locale/ja/LC_MESSAGES/django.po")

pytestmark = [
    pytest.mark.backend_free,
    pytest.mark.skipif(shutil.which("msgfmt") is None, reason="needs GNU gettext (msgfmt)"),
]


def copy_of_the_code(into: Path) -> Path:
    for name in CODE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__", "vendor"))
        else:
            shutil.copy2(source, into / name)
    return into


def check(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bin/check-messages"], cwd=tree, env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        capture_output=True, text=True, timeout=300,
    )


def test_it_fails_on_a_new_string_with_no_japanese(tmp_path):
    tree = copy_of_the_code(tmp_path)
    page = '{% load i18n %}<p>{% translate "Nobody translated me" %}</p>'
    (tree / "templates" / "new_page.html").write_text(page)
    result = check(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'msgid "Nobody translated me"' in result.stdout


def test_it_fails_on_a_fuzzy_entry_and_on_a_catalogue_not_compiled(tmp_path):
    tree = copy_of_the_code(tmp_path)
    po = tree / CATALOGUE
    text = po.read_text()
    # The first entry with no flags of its own (a second flags line would be merged away).
    first = next(m.start() + 2 for m in re.finditer(r"\n\n#: [^\n]*\nmsgid", text))
    po.write_text(text[:first] + "#, fuzzy\n" + text[first:])
    result = check(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fuzzy" in result.stdout and "django.mo is not" in result.stdout


def test_it_passes_the_committed_catalogue(tmp_path):
    result = check(copy_of_the_code(tmp_path))
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
