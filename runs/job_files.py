"""A job kind's run page part and script, found in its folder by the kind's name.

A job kind keeps its page part (page.html) and script (view.js) in its own folder,
runs/core/jobs/<name>/. Pages ask for them by the names JobSpec gives: the template
`jobs/<name>/page.html` (JobPageLoader, in settings.TEMPLATES) and the static file
`js/jobs/<name>.js` (JobScriptFinder, in settings.STATICFILES_FINDERS, which `collectstatic`,
WhiteNoise and the offline report read as they read static/).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from django.template import Origin
from django.template.loaders.filesystem import Loader as FilesystemLoader

from runs.core import registry
from runs.core.jobs.spec import JobSpec

__all__ = ["SCRIPT_PREFIX", "JobPageLoader", "JobScriptFinder"]

SCRIPT_PREFIX = "js/jobs"
PAGE_FILE = "page.html"
SCRIPT_FILE = "view.js"


def _folder(name: str) -> Path | None:
    spec = registry.JOBS.get(name)
    return spec.folder if spec is not None else None


class JobPageLoader(FilesystemLoader):
    """Loads `jobs/<name>/page.html` from the folder of the job kind called <name>."""

    def get_template_sources(self, template_name: str) -> Iterator[Origin]:
        parts = template_name.split("/")
        if len(parts) != 3 or parts[0] != "jobs" or parts[2] != PAGE_FILE:
            return
        folder = _folder(parts[1])
        if folder is not None:
            yield Origin(name=str(folder / PAGE_FILE), template_name=template_name, loader=self)


class _ScriptStorage(FileSystemStorage):
    """A job kind's folder, where `<name>.js` (the name pages use) reads its view.js."""

    def __init__(self, spec: JobSpec) -> None:
        super().__init__(location=spec.folder)
        self.prefix = SCRIPT_PREFIX
        self.script = f"{spec.name}.js"

    def path(self, name: str) -> str:
        return super().path(SCRIPT_FILE if name == self.script else name)


class JobScriptFinder(BaseFinder):
    """Finds `js/jobs/<name>.js` as the view.js of the job kind called <name>."""

    def _storages(self) -> Iterator[_ScriptStorage]:
        for spec in registry.JOBS.values():
            if spec.folder is not None and (spec.folder / SCRIPT_FILE).is_file():
                yield _ScriptStorage(spec)

    @overload
    def find(self, path: str, find_all: Literal[False] = False) -> str | None: ...

    @overload
    def find(self, path: str, find_all: Literal[True]) -> list[str]: ...

    def find(self, path: str, find_all: bool = False) -> str | list[str] | None:
        found = [storage.path(storage.script) for storage in self._storages()
                 if path == f"{SCRIPT_PREFIX}/{storage.script}"]
        # None found: [], as Django's own finders answer (finders.find would keep a None as a match)
        return found if find_all or not found else found[0]

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        for storage in self._storages():
            yield storage.script, storage
