"""`make bench`: benchmarks of the harness itself, run on demand (`python -m tests.bench`).

Each benchmark is a module of this package (never named test_*, so pytest does not collect
it) exposing `run(short: bool) -> dict` whose "figures" list is built with `figures.figure`.
Every figure is compared with a reference measured in the same run, since these machines are
noisy. Short mode runs a tiny version of each, to check it still runs; goals are not enforced.
"""

# The order `make bench` runs them in; `--only` picks a subset by these names.
BENCHMARKS = (
    "fidelity", "agreement", "vllm_agreement", "overhead", "live_latency", "scale", "relay", "telemetry",
    "worker_threads",
)
