"""Print pip constraints pinning each dependency pyproject.toml declares to its floor (`>=X` -> `==X`).

Usage: python .ci/floors.py [EXTRA...] > floors.txt; then pip install -c floors.txt ...
Dependencies without a floor are left free. Extras named on the command line are pinned too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
reqs = list(project["dependencies"])
for extra in sys.argv[1:]:
    reqs += project["optional-dependencies"][extra]
for req in reqs:
    m = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(?:[^;]*?)>=\s*([\w.]+)", req)
    if m:
        print(f"{m.group(1)}=={m.group(2)}")
