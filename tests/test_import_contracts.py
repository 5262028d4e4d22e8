"""The import contracts of pyproject.toml ([tool.importlinter], what `lint-imports` checks), run
through import-linter's own contract class on the project's graph: the floors' layers contract
holds, and a back-import added on purpose breaks it.

The check runs in a fresh interpreter, as `lint-imports` does: once Django has loaded Channels and
Twisted, zope.interface hides an attribute import-linter's option check looks for on every class.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.test_structure import ROOT

pytestmark = pytest.mark.backend_free

FLOORS = ("The floors, from the ground up: measure, teams, engines, runs, traffic, sparkdash; "
          "none imports one above it")
CHECK = """
import json, sys
import grimp
from importlinter.application.use_cases import read_user_options
from importlinter.configuration import configure
from importlinter.contracts.layers import LayersContract

configure()  # what lint-imports does first: the readers of its config
options = read_user_options("pyproject.toml")
session = options.session_options
assert str(session["exclude_type_checking_imports"]).lower() == "false", session
graph = grimp.build_graph(*session["root_packages"], include_external_packages=True,
                          exclude_type_checking_imports=False)
for importer, imported in json.loads(sys.argv[2]):
    graph.add_import(importer=importer, imported=imported)
(contract,) = [c for c in options.contracts_options if c["name"] == sys.argv[1]]
check = LayersContract(name=sys.argv[1], session_options=session, contract_options=contract).check(
    graph, verbose=False)
print(json.dumps({"kept": check.kept, "said": repr(check.metadata)}))
"""


def floors_check(*added: tuple[str, str]) -> dict[str, object]:
    """The floors contract checked on the project's graph (type-hint imports counted) plus ``added``."""
    done = subprocess.run([sys.executable, "-c", CHECK, FLOORS, json.dumps(added)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_it_keeps_the_floors_in_order():
    assert floors_check()["kept"] is True


def test_it_breaks_the_floors_contract_with_a_back_import_added_on_purpose():
    result = floors_check(("teams.models", "runs.models"))
    assert result["kept"] is False
    assert "teams.models" in str(result["said"]) and "runs.models" in str(result["said"])
