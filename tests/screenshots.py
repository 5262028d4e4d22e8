"""`make screenshots`: the newcomer's walk (tests/newcomer.py) with its pictures kept in docs/img/.

Run as `python -m tests.screenshots [FOLDER]`; needs Debian's chromium and chromium-driver.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.chromium import chromium
from tests.newcomer import ROOT, DemoSite, walk


def main(folder: Path) -> int:
    """Walk a fresh demo site and write its screenshots into `folder`; print what was written."""
    with DemoSite() as site, tempfile.TemporaryDirectory(prefix="sparkdash-shots-") as profile:
        driver = chromium(profile, height=1500)
        try:
            seen = walk(driver, site, shots=folder)
        finally:
            driver.quit()
    for path in seen.shots:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img"))
