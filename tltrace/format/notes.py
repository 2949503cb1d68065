"""The notes a compile leaves while it runs, for when its process dies: their names, codec and reading.

* `inflight`: one fixed-width JSON line (`inflight_line`), rewritten in place by the
  compiling thread before and after each top-level pass and codegen call:
  `{"at": "in", "index": 12, "name": "tl.LowerTileOp", "phase": "pipeline_c"}`; once the
  compile has returned or raised, `{"at": "ended", "name": "returned"}` (or "raised"): a
  process gone after that exited before its records were written (records.EXITED).
* `fatal.txt`: Python's faulthandler's file, headed by `FATAL_HEAD`.
* `timedout`: `run --timeout S` stopped the process inside this compile (tracing/watchdog.py):
  `{"seconds": S, "file": "/abs/script.py", "line": 21, "stacks": "timeout-stacks.txt"}`.

session/fatal.py writes them; history/loading.py reads them back (`note_of`) for a run
whose process is gone. Reads never follow a link or wait on a special file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from .layout import FATAL, INFLIGHT, TIMEDOUT
from .names import pass_display_name
from .records import EXITED_NOTE

__all__ = [
    "FATAL",
    "FATAL_HEAD",
    "INFLIGHT",
    "TIMEDOUT",
    "inflight_line",
    "note_of",
    "signal_of",
    "timeout_of",
    "where_of",
]

WIDTH = 512  # the inflight line's fixed size: a rewrite always covers the last one
FATAL_HEAD = b"tltrace: the stacks below are Python's faulthandler's, written when the process died\n\n"
_FATAL_LINE = re.compile(r"^Fatal Python error: (.+?)\s*$", re.M)
_MAX_READ = 1 << 20

_quote = json.encoder.encode_basestring_ascii  # a JSON string literal, made in C


_LINES: dict[tuple[str, str, int | None, str | None], bytes] = {}  # inflight_line's, by its arguments
_LINES_MAX = 4096  # then the cache starts again (a process's pipelines have a few hundred passes)


def inflight_line(at: str, name: str, index: int | None = None, phase: str | None = None) -> bytes:
    """Return the `inflight` line: where the compile is ("in" or "after" a pass), WIDTH bytes, newline last.

    Made once per distinct line (every compile of one pipeline marks the same passes at the
    same indices: an autotune's configs, a test's parametrizations), then looked up."""
    key = (at, name, index, phase)
    line = _LINES.get(key)
    if line is None:
        if len(_LINES) >= _LINES_MAX:
            _LINES.clear()
        line = _LINES[key] = _inflight_line(at, name, index, phase)
    return line


def _inflight_line(at: str, name: str, index: int | None, phase: str | None) -> bytes:
    text = f'{{"at":{_quote(at)},"name":{_quote(name[:200])}'
    if index is not None:
        text += f',"index":{int(index)}'
    if phase:
        text += f',"phase":{_quote(phase[:100])}'
    return (text + "}").encode("ascii")[: WIDTH - 1].ljust(WIDTH - 1) + b"\n"


def _read(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def where_of(run_dir: Path) -> dict[str, Any] | None:
    """Return the `inflight` line of a run ({"at", "name", "index"?, "phase"?}), or None."""
    text = _read(Path(run_dir) / INFLIGHT)
    if not text or not text.strip():
        return None
    try:
        data = json.loads(text.strip())
    except ValueError:
        return None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("name"), str)
        or data.get("at") not in ("in", "after", "ended")
    ):
        return None
    if not isinstance(data.get("index"), int) or isinstance(data.get("index"), bool):
        data.pop("index", None)
    return data


def signal_of(run_dir: Path) -> str | None:
    """Return the fatal error faulthandler wrote into the run's `fatal.txt` ("Segmentation fault"), or None."""
    text = _read(Path(run_dir) / FATAL)
    m = _FATAL_LINE.search(text or "")
    return m.group(1)[:200] if m else None


def timeout_of(run_dir: Path) -> dict[str, Any] | None:
    """Return the run's `timedout` note ({"seconds", "file"?, "line"?, "stacks"?}), or None."""
    text = _read(Path(run_dir) / TIMEDOUT)
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    secs = data.get("seconds") if isinstance(data, dict) else None
    if isinstance(secs, bool) or not isinstance(secs, (int, float)):
        return None
    return data


def ended(run_dir: Path) -> bool:
    """Return True when the run's `inflight` note says its compile had ended (returned or raised)."""
    where = where_of(run_dir)
    return where is not None and where["at"] == "ended"


def note_of(run_dir: Path) -> str | None:
    """Return one line on how a run's process died, from the files above; None when they say nothing."""
    where = where_of(run_dir)
    fatal = signal_of(run_dir)
    if where is None and fatal is None:
        return None
    if where is not None and where["at"] == "ended":  # the compile was over: only its records were cut
        how = "raised" if where["name"] == "raised" else "returned"
        if fatal is not None:
            return f"the compile {how}, then the process died before its records were written: {fatal} (the stacks: {FATAL})"
        return f"the compile {how}, but its {EXITED_NOTE}"
    place = ""
    if where is not None:
        name = pass_display_name(where["name"])
        what = f"pass {where['index']} ({name})" if "index" in where else name
        place = f" inside {what}" if where["at"] == "in" else f" after {what}"
    timed = timeout_of(run_dir)
    if timed is not None:
        called = ""
        if isinstance(timed.get("file"), str) and isinstance(timed.get("line"), int):
            called = f", called from {Path(timed['file']).name}:{timed['line']}"
        kept = f" (the stacks: {timed['stacks']})" if isinstance(timed.get("stacks"), str) else ""
        return f"timed out after {timed['seconds']:g} s{place}{called}{kept}"
    if fatal is not None:
        return f"the process died{place}: {fatal} (the stacks: {FATAL})"
    return (
        f"the process ended{place} before the compile finished (no {FATAL}: killed, exited, "
        "or its faulthandler wrote elsewhere)"
    )
