"""runs.job_files: each job kind's run page part and script, found in its folder by the kind's name."""
from __future__ import annotations

from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.template.loader import get_template

from runs.core import registry


def test_it_finds_each_kinds_script_in_its_folder():
    for name, spec in registry.JOBS.items():
        assert finders.find(spec.script) == str(spec.folder / "view.js"), name
        assert finders.find(spec.script, find_all=True) == [str(spec.folder / "view.js")]


def test_it_finds_no_script_for_a_kind_nobody_declared():
    assert finders.find("js/jobs/no-such-kind.js") is None


def test_it_loads_each_kinds_page_part_from_its_folder():
    for spec in registry.JOBS.values():
        assert get_template(spec.partial).origin.name == str(spec.folder / "page.html")


def test_it_collects_each_kinds_script_under_its_name(tmp_path, settings):
    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", "--noinput", "-v", "0")
    for name, spec in registry.JOBS.items():
        collected = tmp_path / "js" / "jobs" / f"{name}.js"
        assert collected.read_bytes() == (spec.folder / "view.js").read_bytes()
