"""The lossless job kind, in one folder: kind.py (its parameters, summary type, metrics and JOB),
page.html (its run page part), view.js (its run page script), loop.py (its core loop).

Found by runs.core.registry, which scans runs.core.jobs (docs/architecture.md, "Adding a job kind").
"""
