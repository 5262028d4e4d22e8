"""The code's import structure: no module imports itself back through others (no import cycle),
and no floor imports one above it (measure, teams, engines, runs, traffic, sparkdash, from the
ground up). Imports for type hints only (under TYPE_CHECKING) count too: a circle they close is a
circle, and a floor that names a higher one's types depends on it."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import grimp
import pytest

pytestmark = pytest.mark.backend_free

PACKAGES = ("claims", "engines", "measure", "runs", "sparkdash", "teams", "traffic")
# The floors from the ground up: each may import those below it, none one above it.
FLOORS = ("measure", "teams", "engines", "runs", "traffic", "sparkdash")
# Packages on a floor beside another's (claims beside traffic; lint-imports keeps the two apart).
BESIDE = {"claims": "traffic"}
ROOT = str(Path(__file__).resolve().parent.parent)


def real_graph(include_external_packages: bool = False) -> grimp.ImportGraph:
    """The project's import graph, type-hint imports included."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    return grimp.build_graph(*PACKAGES, include_external_packages=include_external_packages,
                             exclude_type_checking_imports=False)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return real_graph()


def upward_imports(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """(importer, imported) for each direct import from a floor to one above it, sorted."""
    floor = {name: rank for rank, name in enumerate(FLOORS)}
    floor |= {name: floor[sibling] for name, sibling in BESIDE.items()}
    found = []
    for importer in graph.modules:
        below = floor.get(importer.partition(".")[0])
        for imported in graph.find_modules_directly_imported_by(importer):
            above = floor.get(imported.partition(".")[0])
            if below is not None and above is not None and above > below:
                found.append((importer, imported))
    return sorted(found)


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import graph's strongly connected parts of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start not in index:
            _visit(graph, start, index, low, stack, found)
    return found


def _visit(graph: grimp.ImportGraph, start: str, index: dict[str, int], low: dict[str, int],
           stack: list[str], found: list[list[str]]) -> None:
    work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
    index[start] = low[start] = len(index)
    stack.append(start)
    while work:
        module, imported = work[-1]
        step = next(imported, None)
        if step is not None:
            if step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph.find_modules_directly_imported_by(step)))))
            elif step in stack:
                low[module] = min(low[module], index[step])
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[module])
        if low[module] == index[module]:
            part = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(part) > 1:
                found.append(sorted(part))


def test_it_finds_a_cycle_where_there_is_one():
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_it_has_no_import_cycle(graph):
    assert cycles(graph) == []


def test_it_finds_a_cycle_closed_by_a_back_import_added_on_purpose(graph):
    graph = copy.deepcopy(graph)
    graph.add_import(importer="measure.words", imported="engines.models")  # engines.kinds imports it
    assert any({"measure.words", "engines.models", "engines.kinds"} <= set(part) for part in cycles(graph))


def test_it_imports_no_floor_from_one_below_it(graph):
    assert upward_imports(graph) == []


def test_it_finds_a_back_import_added_on_purpose(graph):
    graph = copy.deepcopy(graph)
    graph.add_import(importer="teams.models", imported="runs.models")
    graph.add_import(importer="engines.kinds", imported="sparkdash.celery")
    assert upward_imports(graph) == [("engines.kinds", "sparkdash.celery"), ("teams.models", "runs.models")]


def test_it_counts_imports_for_type_hints_only(graph):
    # engines.validation names teams.models.Team under TYPE_CHECKING only.
    assert graph.direct_import_exists(importer="engines.validation", imported="teams.models")
