"""Models by name: a config's model is a name inside this machine's model directories, or a hub id.

The directories are a setting of the machine that checks, never of the database:
``SPARKDASH_MODEL_DIRS`` (folders separated by ``:``; default ``~/models``, ``/models`` and the
engine cache's ``models`` folder, ``$SPARKDASH_ENGINE_CACHE`` or ``~/.cache/sparkdash/engine``).
An absolute path is allowed only inside one of them, after following every symbolic link; a
relative name has no ``..`` and no leading ``-`` or ``.`` in any part. A refused path gets the same
message whether or not it exists, and nothing outside the directories is ever opened: only
:func:`local_file` finds a file (for its size and hash), and :func:`local_gguf` reads one only
when it starts with the GGUF magic.
No Django here.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from engines.recipes.field_words import field_words
from measure.words import Words, gettext_noop

__all__ = ["MODEL_DIRS_ENV", "local_file", "local_gguf", "model_dirs", "model_refusal", "resolve_model"]

MODEL_DIRS_ENV = "SPARKDASH_MODEL_DIRS"
GGUF_MAGIC = b"GGUF"
# A model name, hub id (org/name) or Ollama tag (hf.co/org/name:Q4_K_M): parts of letters, digits
# and _ . : + @ -, each starting with a letter or digit, separated by "/".
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+@-]*(/[A-Za-z0-9][A-Za-z0-9_.:+@-]*)*")
NAME_MAX = 300


def model_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """This machine's model directories, absolute (``~`` expanded), in the order they are searched."""
    env = os.environ if environ is None else environ
    text = env.get(MODEL_DIRS_ENV)
    if text is None:
        cache = env.get("SPARKDASH_ENGINE_CACHE") or "~/.cache/sparkdash/engine"
        text = f"~/models:/models:{cache}/models"
    return [Path(os.path.expanduser(part.strip())).absolute() for part in text.split(":") if part.strip()]


def model_refusal(field: str, model: str) -> Words | None:
    """Why ``model`` may not be a config's ``field`` (model or draft_model) here, or None.

    The same message for a path outside the directories whether or not it exists.
    """
    model = model.strip()
    if not model:
        return None
    if model.startswith(("/", "~")):
        fine = _inside(Path(os.path.expanduser(model)))
    else:
        fine = len(model) <= NAME_MAX and NAME.fullmatch(model) is not None and ".." not in model.split("/")
    if fine:
        return None
    return Words(
        gettext_noop("%(field)s: %(model)s is not a model name inside this machine's model directories "
                     "(%(dirs)s) nor a hub id (org/name): paths elsewhere are refused"),
        field=field_words(field), model=repr(model), dirs=", ".join(str(d) for d in model_dirs()) or "none",
    )


def resolve_model(model: str) -> str:
    """What the engine loads for an allowed ``model``: a path as given, a name found in a model
    directory as its path there, anything else (a hub id, an Ollama tag) unchanged for the engine."""
    model = model.strip()
    if not model or model.startswith(("/", "~")):
        return os.path.expanduser(model)
    for folder in model_dirs():
        candidate = folder / model
        if os.path.lexists(candidate) and _inside(candidate):
            return str(candidate)
    return model


def local_file(model: str) -> Path | None:
    """The file an allowed ``model`` names inside the model directories, or None (a hub id, a tag,
    a folder, a path elsewhere or a missing file)."""
    if not model.strip() or model_refusal("model", model) is not None:
        return None
    path = Path(resolve_model(model))
    if not path.is_absolute() or not _inside(path) or not path.is_file():
        return None
    return path


def local_gguf(model: str) -> Path | None:
    """The GGUF file an allowed ``model`` names inside the model directories, or None (a hub id, a
    tag, a path elsewhere, a missing file or one that is not a GGUF: nothing of it is read)."""
    path = local_file(model)
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            return path if handle.read(len(GGUF_MAGIC)) == GGUF_MAGIC else None
    except OSError:
        return None


def _inside(path: Path) -> bool:
    """Whether ``path`` lies inside a model directory, as written and after following its links."""
    if not path.is_absolute() or ".." in path.parts:
        return False
    dirs = model_dirs()
    written = Path(os.path.normpath(path))
    if not any(written.is_relative_to(folder) for folder in dirs):
        return False
    real = Path(os.path.realpath(written))
    return any(real.is_relative_to(os.path.realpath(folder)) for folder in dirs)
