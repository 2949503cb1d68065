"""The launch log of an invocation (`run --launches`): its name, its lines, and their reading.

    <script>/.run_records/launches.<invocation id>.jsonl

One JSON object per line, appended by the writing processes in whole lines (one `write` per
batch, O_APPEND: processes of one job share the file). Three kinds of line, told by their keys:

- a kernel, once per kernel object a process launched before it launches: `{"kernel": K,
  "pid", "name", "source": the hash of its generated source (format/layout.text_hash: the
  compile's codegen record has it as after_hash), "out_idx": [the outputs the adapter
  allocates]}`;
- a launch: `{"launch": K, "pid", "t": monotonic nanoseconds, "thread", "site": [file, line,
  function] (the calling Python line: the first frame outside TileLang and tltrace), "args":
  [{"shape", "dtype", "strides", "device"} (a tensor) | {"type", "value"} (a number, a
  string cut at 80 characters, None) | {"type"} (anything else)]}`;
- the end of a process's recording: `{"end": pid, "recorded": N, "dropped": M}` (M launches
  past `--launch-limit` counted, not recorded).

A process killed mid-write leaves a torn last line: `read` keeps every whole line before it
and counts the bytes cut. A line that does not parse elsewhere is skipped and counted.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fs import safe_read
from .layout import LAUNCHES, RUN_RECORDS
from .names import is_safe_component

SUFFIX = ".jsonl"
MAX_BYTES = 512 << 20  # a log larger than this is read up to here (the rest counted as cut)
_NAME = re.compile(r"^launches\.([0-9A-Za-z_]+)\.jsonl$")


def file_name(invocation: str) -> str:
    """Return the log's name for `invocation` (ValueError when the id is not one path component)."""
    if not is_safe_component(invocation):
        raise ValueError(f"bad invocation id {invocation!r}")
    return f"{LAUNCHES}.{invocation}{SUFFIX}"


INPUTS = "inputs"  # run --save-inputs: <script>/.run_records/inputs.<invocation id>/ (launches/inputs.py)
INPUTS_INDEX = "index.jsonl"  # in that directory: one line per saved (or skipped) launch


def inputs_name(invocation: str) -> str:
    """Return the name of the saved-arguments directory of `invocation` (ValueError for a bad id)."""
    return file_name(invocation).replace(LAUNCHES, INPUTS, 1).removesuffix(SUFFIX)


def path_of(script_dir: str | os.PathLike, invocation: str) -> Path:
    """Return the log of `invocation` under a script dir."""
    return Path(script_dir) / RUN_RECORDS / file_name(invocation)


def invocation_of(name: str) -> str | None:
    """Return the invocation id a log's file name carries, or None for any other name."""
    m = _NAME.match(name)
    return m.group(1) if m else None


def encode(lines: list[dict[str, Any]]) -> bytes:
    """Return `lines` as the log's bytes: one compact JSON object per line."""
    return "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines).encode("utf-8")


@dataclass
class LaunchLog:
    """What a launch log holds, as read: its lines by kind, and what could not be read."""

    kernels: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # (pid, K) -> kernel line
    launches: list[dict[str, Any]] = field(default_factory=list)  # in the file's order
    ends: list[dict[str, Any]] = field(default_factory=list)
    cut: int = 0  # bytes of a torn last line (a writer killed mid-write), or past MAX_BYTES
    damaged: int = 0  # whole lines that are not a log line

    @property
    def dropped(self) -> int:
        """Launches counted past the limit, over every process that ended its recording."""
        return sum(int(e.get("dropped") or 0) for e in self.ends)


def read(path: str | os.PathLike) -> LaunchLog:
    """Return the log at `path` (FileNotFoundError when there is none; NotAFile for anything but a file)."""
    data = safe_read.read_bytes(path, MAX_BYTES + 1)
    log = LaunchLog()
    if len(data) > MAX_BYTES:
        data = data[:MAX_BYTES]
        log.cut += 1
    end = data.rfind(b"\n") + 1
    log.cut += len(data) - end  # a last line without its newline: torn
    for raw in data[:end].splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            log.damaged += 1
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("pid", obj.get("end")), int):
            log.damaged += 1
        elif isinstance(obj.get("launch"), int) and isinstance(obj.get("t"), int):
            log.launches.append(obj)
        elif isinstance(obj.get("kernel"), int):
            log.kernels[(obj["pid"], obj["kernel"])] = obj
        elif isinstance(obj.get("end"), int):
            log.ends.append(obj)
        else:
            log.damaged += 1
    return log
