"""runs.core.typed_reads: a run's results read through declarations, and every template's
`summary.<key>` lookup held to them, so a misspelt key fails here rather than showing "—"."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from measure import catalog
from runs.core.typed_reads import UndeclaredKey, declared_fields, figure, recorded, stored, typed

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[3]
SKIPPED = {".venv", "node_modules", ".git"}
# `summary.<key>` in a template: a run's stored summary read by its key.
LOOKUP = re.compile(r"\bsummary\.([A-Za-z_][A-Za-z0-9_]*)")
# Django's own attributes of a dict, which a lookup may reach rather than a key.
DICT_METHODS = {"items", "keys", "values"}
# runs.core.typed_reads' readers, by the names code calls them.
READERS = {"figure", "stored", "recorded"}


def templates() -> list[Path]:
    """Every template of the repository, wherever a job kind's page part lives."""
    return sorted(p for p in ROOT.rglob("*.html") if not SKIPPED & set(p.relative_to(ROOT).parts))


def test_it_reads_a_declared_figure_as_its_page_shows_it():
    summary = {"ttft_s": {"median": 0.2, "min": 0.1, "max": 0.3, "n": 3},
               "acceptance_rate": {"pooled": 0.75, "source": "counters"}, "accuracy": 0.4}
    assert (figure(summary, "ttft_s"), figure(summary, "acceptance_rate")) == (0.2, 0.75)
    assert (figure(summary, "accuracy"), figure(summary, "decode_tps_client")) == (0.4, None)
    assert stored(summary, "acceptance_rate")["source"] == "counters"


def test_it_refuses_a_key_no_declaration_names():
    with pytest.raises(UndeclaredKey, match="ttft_ss"):
        figure({"ttft_ss": 1.0}, "ttft_ss")
    with pytest.raises(UndeclaredKey, match="engine_starup_s"):
        recorded({}, "engine_starup_s")
    with pytest.raises(UndeclaredKey):
        stored({}, "tool")  # a summary field, but no metric of the catalogue


def test_it_reads_a_declared_field_with_its_default():
    assert recorded({"tool": "guidellm"}, "tool") == "guidellm"
    assert recorded({}, "levels", {}) == {}


def test_it_reads_a_summary_as_its_job_kinds_type():
    found = typed("mmlu-pro", {"accuracy": 0.5, "correct": 5, "total": 10})
    assert found is not None and found.model_dump()["accuracy"] == 0.5
    assert typed("no-such-job", {"accuracy": 0.5}) is None


def test_it_finds_the_templates_wherever_they_live():
    found = {p.name for p in templates()}
    assert {"detail.html", "_counters.html"} <= found


def test_it_reads_in_every_template_only_summary_keys_something_declares():
    known = declared_fields() | set(catalog.CATALOG) | DICT_METHODS
    undeclared = sorted(f"{path.relative_to(ROOT)}: summary.{key}" for path in templates()
                        for key in LOOKUP.findall(path.read_text(encoding="utf-8")) if key not in known)
    assert undeclared == []


def _constant_reads(path: Path) -> list[str]:
    """The constant keys `path` reads through figure / stored / recorded."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) >= 2]
    named = [c for c in calls if getattr(c.func, "id", getattr(c.func, "attr", "")) in READERS]
    return [c.args[1].value for c in named if isinstance(c.args[1], ast.Constant)
            and isinstance(c.args[1].value, str)]


def test_it_reads_in_the_code_only_keys_something_declares():
    known = declared_fields() | set(catalog.CATALOG)
    folders = ("runs", "traffic", "engines", "sparkdash")
    sources = [p for folder in folders for p in (ROOT / folder).rglob("*.py")]
    read = {f"{p.relative_to(ROOT)}: {key}" for p in sources for key in _constant_reads(p)}
    assert len(read) > 10
    assert sorted(r for r in read if r.rpartition(": ")[2] not in known) == []
