"""The job registry: every kind found by its folder, named nowhere else, its parts in place."""
import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import runs.core.jobs
from runs.core import registry
from runs.core.jobs.params import IntParam, RequestsParam

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[4]
# Where a job kind's name may be written: its own folder (its JOB, and the names of the samples and
# summaries its loop makes), the migrations, and these, each for the reason given.
ALLOWED = {
    # "lookahead" is also a config setting (the draft length), not only the job kind.
    "engines/admin.py": {"lookahead"}, "engines/forms.py": {"lookahead"},
    "engines/setting_labels.py": {"lookahead"}, "runs/views/run_page.py": {"lookahead"},
    "engines/recipes/__init__.py": {"lookahead"}, "engines/recipes/llama_server.py": {"lookahead"},
    "engines/recipes/sglang.py": {"lookahead"}, "engines/management/commands/simengine.py": {"lookahead"},
    "runs/worker/engine_session.py": {"lookahead"}, "runs/core/jobs/lossless/loop.py": {"lookahead"},
    "runs/results/flat.py": {"lookahead", "concurrency"},  # and an imported level's load
    # A request row's concurrency level (the energy figures are given per level), not the job kind.
    "runs/core/energy.py": {"concurrency"}, "runs/templatetags/telemetry_format.py": {"concurrency"},
    "runs/core/scoring/table.py": {"concurrency"}, "runs/results/cross_tool.py": {"concurrency"},
    # Requests in flight at once: an imported level's load, and the llm-d report's.
    "runs/actions/imports.py": {"concurrency"}, "runs/core/imports/llama_benchy.py": {"concurrency"},
    "runs/actions/import_alerts.py": {"concurrency"}, "runs/core/imports/aiperf.py": {"concurrency"},
    "runs/core/jobs/imported/kind.py": {"concurrency"}, "runs/results/llmd.py": {"concurrency"},
    # The simulator's vocabulary of words it streams.
    "engines/simulator/wire.py": {"speed"},
}


def _kind_strings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in registry.JOBS}


def _own_folder(kind: str) -> str:
    return f"runs/core/jobs/{kind.replace('-', '_')}/"


def test_it_finds_every_job_kind_by_its_folder():
    folders = {p.parent.name for p in (ROOT / "runs/core/jobs").glob("*/kind.py")}
    assert {name.replace("-", "_") for name in registry.JOBS} == folders
    assert {spec.folder for spec in registry.JOBS.values()} == {
        ROOT / "runs/core/jobs" / name for name in folders}
    assert not hasattr(registry, "JOB_KINDS")
    assert list(registry.JOBS) == sorted(registry.JOBS, key=lambda name: registry.JOBS[name].order)


def test_it_names_a_job_kind_only_in_its_own_modules():
    stray = []
    for path in [*ROOT.glob("engines/**/*.py"), *ROOT.glob("runs/**/*.py"), *ROOT.glob("sparkdash/*.py")]:
        rel = path.relative_to(ROOT).as_posix()
        if "/migrations/" in rel or "/fixtures/" in rel:
            continue
        for kind in _kind_strings(path) - ALLOWED.get(rel, set()):
            if not rel.startswith(_own_folder(kind)):
                stray.append(f"{rel}: {kind!r}")
    assert stray == []


@pytest.mark.parametrize("kind", list(registry.JOBS))
def test_it_has_a_run_page_view_and_part_for_each_job_kind(kind):
    spec = registry.JOBS[kind]
    assert spec.folder == ROOT / _own_folder(kind)
    assert (spec.folder / "view.js").is_file() and (spec.folder / "page.html").is_file()
    assert (spec.script, spec.partial) == (f"js/jobs/{kind}.js", f"jobs/{kind}/page.html")
    assert spec.headline is not None and spec.params


def test_it_refuses_a_parameter_name_that_takes_two_kinds_of_value():
    speed = registry.JOBS["speed"]
    clash = dataclasses.replace(speed, name="clash", params={"reps": RequestsParam("recorded requests")})
    with pytest.raises(ValueError, match=r"job clash: parameter 'reps' is already a IntParam"):
        registry.check({"speed": speed, "clash": clash})
    same = dataclasses.replace(speed, name="same", params={"reps": IntParam("passes", 1, 9, 2)})
    assert registry.check({"speed": speed, "same": same})


def test_it_imports_the_registry_without_django():
    code = "import sys, runs.core.registry as r; assert r.JOBS; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


@pytest.mark.parametrize(("kind", "params", "text"), [
    ("speed", {"reps": 3, "max_tokens": 256}, "3 repetitions, 256 max tokens"),
    ("lookahead", {"lengths": [0, 4], "reps": 1}, "lookahead 0, 4 · 1 repetition"),
    ("replay", {"requests": [{}, {}], "reps": 2}, "2 recorded requests \u00d7 2 passes"),
    ("needle", {"lengths": [4096], "depths": [0.1, 0.9]}, "4096 tokens at depths 0.1, 0.9"),
])
def test_it_words_a_runs_parameters_as_its_kind_says(kind, params, text):
    assert registry.JOBS[kind].params_text(params) == text


def test_it_words_a_kind_without_its_own_wording_by_its_parameters_labels():
    plain = dataclasses.replace(registry.JOBS["speed"], describe=None)
    assert plain.params_text({"reps": 2, "max_tokens": 64, "other": 1}) == (
        "repetitions 2 · max tokens per answer 64"
    )


def test_it_refuses_a_job_kind_found_in_two_folders(tmp_path, monkeypatch):
    copy = tmp_path / "speed_again"
    copy.mkdir()
    (copy / "__init__.py").write_text("")
    (copy / "kind.py").write_text("from runs.core.jobs.speed.kind import JOB\n")
    monkeypatch.setattr(runs.core.jobs, "__path__", [*runs.core.jobs.__path__, str(tmp_path)])
    try:
        with pytest.raises(ValueError, match="job kind 'speed' is in two folders"):
            registry.scan()
    finally:
        for name in ("runs.core.jobs.speed_again.kind", "runs.core.jobs.speed_again"):
            sys.modules.pop(name, None)
