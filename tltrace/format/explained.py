"""A failed layout pass's explanation as kept beside its run: `layout_explain.json` (layouts/explain.py
writes it; show, the report model and the CLI read it back here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..fs import safe_read

CACHE = "layout_explain.json"
SCHEMA = 1


def cached(run_dir: Path) -> dict[str, Any] | None:
    """Return the explanation cached beside the run, or None (none, damaged, or of another schema)."""
    try:
        data = json.loads(safe_read.read_text(Path(run_dir) / CACHE))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None
