"""The code's import structure: no module imports itself back through others (no import cycle),
at run time (imports for type hints only do not count)."""
from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

pytestmark = pytest.mark.backend_free

PACKAGES = ("engines", "measure", "runs", "sparkdash", "teams", "traffic")
ROOT = str(Path(__file__).resolve().parent.parent)


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


def test_it_has_no_import_cycle():
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert cycles(graph) == []
