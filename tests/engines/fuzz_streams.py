"""A coverage-guided fuzz target (atheris) for the engine stream parsers.

`python tests/engines/fuzz_streams.py -runs=100000 -seed=1 CORPUS_DIR` mutates the seed answers
in CORPUS_DIR (real wire formats, written by the test that runs this) and checks every input
with tests.engines.stream_fuzzing: figures or EngineError, nothing else. The first input byte
picks the engine kind, the next two where the network reads are cut; the rest is the answer.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sparkdash.settings")

import atheris

with atheris.instrument_imports():
    from engines.clients import base, ollama, openai  # noqa: F401

from tests.engines.stream_fuzzing import KINDS, StreamFeeder, cut

FEEDER = StreamFeeder()


def test_one_input(data: bytes) -> None:
    if len(data) < 3:
        return
    kind = KINDS[data[0] % len(KINDS)]
    body = data[3:]
    FEEDER.check(kind, cut(body, [data[1] * 7, data[2] * 13]))


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
