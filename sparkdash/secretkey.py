"""The secret key of a developer's machine: generated once, kept outside the repository.

Without SECRET_KEY or SECRET_KEY_FILE (`make run`, a worker, a developer's shell), settings.py uses
the key this module keeps in $XDG_CONFIG_HOME/sparkdash/secret_key (~/.config/sparkdash/secret_key),
readable by its owner only. The published example keys are refused with DEBUG off. Plain Python:
settings.py imports it before Django is set up.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

__all__ = ["PUBLIC_KEYS", "default_key_path", "local_secret_key"]

# Keys anyone can read in this repository's history or its example files.
PUBLIC_KEYS = frozenset({"dev-only-insecure-key", "change-me-to-a-long-random-string", ""})
OWNER_ONLY = 0o600


def default_key_path(environ: Mapping[str, str] = os.environ) -> Path:
    """$XDG_CONFIG_HOME/sparkdash/secret_key, or ~/.config/sparkdash/secret_key."""
    config = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".config")
    return Path(config) / "sparkdash" / "secret_key"


def local_secret_key(path: Path) -> str:
    """The key kept in `path`, generated (50 random bytes, URL-safe) the first time.

    Raises ValueError when the file is readable by others or holds a published key.
    """
    if not path.exists():
        _create(path)
    if path.stat().st_mode & 0o077:
        raise ValueError(f"{path} is readable by other users: chmod 600 {path}")
    key = path.read_text().strip()
    if key in PUBLIC_KEYS:
        raise ValueError(f"{path} holds a published key; delete it and a new one is generated")
    return key


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OWNER_ONLY)
    with os.fdopen(descriptor, "w") as out:
        out.write(secrets.token_urlsafe(50) + "\n")
    try:
        # A link never replaces: of two processes starting at once, the first key wins.
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink()

