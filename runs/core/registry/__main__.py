"""Prints the section "The metric catalogue" of docs/metrics.md: `python -m runs.core.registry`.

The catalogue (measure.catalog) holds the shared metrics, and each job kind's once the registry
has found the kinds (importing this package does), so the section is generated from here.
"""
from measure import catalog
from runs.core import registry

if not registry.JOBS:  # the kinds declare their metrics as the registry finds them
    raise SystemExit("no job kinds found")

print(catalog.markdown_table(), end="")
