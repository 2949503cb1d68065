"""docs/screenshots: the pictures docs/report.md shows exist, stay small, and their script runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_picture_the_docs_show_is_there_and_small() -> None:
    shown = []
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md.read_text()):
            path = (md.parent / target).resolve()
            assert path.is_file(), f"{md.name} shows {target}, which is not there"
            shown.append(path)
    pngs = sorted((ROOT / "docs" / "screenshots").glob("*.png"))
    assert pngs and set(pngs) <= set(shown)  # no picture left over that nothing shows
    assert sum(p.stat().st_size for p in pngs) < 400_000


def test_the_screenshot_script_says_how_to_run_it() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "screenshots" / "make.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and "--pass" in p.stdout and "--out" in p.stdout, p.stderr
