"""A run's derived views, cached beside it: `<run_dir>/derived.json` (read, written, checked).

Capture keeps what only capture can see; what is a pure function of the stored texts
(the +/- counts of a pass, the run's facts) is computed by the first reader that needs it
(history/derived.py, facts/__init__.py) and cached here, so the next reader reads one
small file. The cache is a convenience, never the truth:

- `version` says which derivation wrote it; another version is recomputed, never read.
- `key` is the digest of what the views were computed from (every record's index, status
  and text hashes, and the run's status): a run rewritten since (a finished run, a
  re-recorded one) no longer matches, and its views are recomputed.
- Only a run that has ended is cached (a running compile's records still grow).
- The file is written atomically (fs/atomic.py); a trace dir that cannot be written (a
  read-only copy) is read all the same: the views are computed and not kept.

    {"version": 1, "key": "<sha256 hex>", "counts": {"<index>": [added, removed], ...},
     "facts": {version, values, texts} | absent}
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..fs import safe_read
from ..fs.atomic import atomic_write
from .records import RUNNING, RunManifest

DERIVED = "derived.json"  # in a run dir
VERSION = 1  # of the derivations cached: bump when a count or a fact is computed differently


def key_of(manifest: RunManifest) -> str:
    """Return the digest of what a run's derived views are computed from (its records' texts and status)."""
    h = hashlib.sha256(manifest.status.encode())
    for r in manifest.records:
        h.update(f"\n{r.index}:{r.status}:{r.before_hash}:{r.after_hash}".encode())
    return h.hexdigest()


def cacheable(manifest: RunManifest) -> bool:
    """True when a run's views may be cached: it has ended (a running compile's records still grow)."""
    return manifest.status != RUNNING


def read(run_dir: Path, manifest: RunManifest) -> dict[str, Any]:
    """Return the cached views of the run when they are current (its version and key), else {}."""
    try:
        data = json.loads(safe_read.read_text(Path(run_dir) / DERIVED))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("key") != key_of(manifest):
        return {}
    return data


def update(run_dir: Path, manifest: RunManifest, **views: Any) -> bool:
    """Add `views` to the run's cache (atomically); False when it is not kept (a running run, a read-only dir)."""
    if not cacheable(manifest):
        return False
    data = read(run_dir, manifest) or {"version": VERSION, "key": key_of(manifest)}
    data.update(views)
    try:
        atomic_write(Path(run_dir) / DERIVED, json.dumps(data, separators=(",", ":")).encode())
    except OSError:
        return False
    return True


def counts_of(data: dict[str, Any]) -> dict[int, tuple[int, int]]:
    """Return {record index: (added, removed)} from a cache read by `read` (malformed entries left out)."""
    out: dict[int, tuple[int, int]] = {}
    raw = data.get("counts")
    if not isinstance(raw, dict):
        return out
    for k, v in raw.items():
        if (
            isinstance(k, str)
            and k.lstrip("-").isdigit()
            and isinstance(v, list)
            and len(v) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v)
        ):
            out[int(k)] = (v[0], v[1])
    return out
