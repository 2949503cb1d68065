"""Who writes a run (a manifest's `writer`), whether that writer still lives, and who wrote a
recorded run (its pid, its torchrun rank, the label a person reads).

A pid alone is not an identity: in a container the tracing process is often pid 1
in every run, and pids are reused. A writer is (pid, process start time, host);
the start time comes from /proc/<pid>/stat (clock ticks since boot), so a dead
run whose pid was reused by another process reads as dead.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from .ids import pid_of_run_id, time_of_id
from .records import RunManifest

# Set when tltrace is imported, before this process can have made any run: a run id
# dated earlier that names our pid was made by another process with the same pid.
_LOADED_AT = time.time()
PID_LIMIT = 1 << 22  # Linux's largest pid_max; os.kill() overflows far above it
_lock = threading.Lock()
_token: dict[str, Any] | None = None
_token_pid: int | None = None


def process_start(pid: int) -> str | None:
    """Return the start time of process `pid` (field 22 of /proc/<pid>/stat), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ')'.
    tail = data[data.rfind(b")") + 2 :].split()
    try:
        return tail[19].decode()  # field 22 counted from field 3
    except IndexError:
        return None


def _host() -> str:
    try:
        return socket.gethostname()
    except Exception:
        return ""


def writer_token() -> dict[str, Any]:
    """Return this process's identity: {"pid", "start", "host"}, and "rank" under torchrun (cached; renewed after fork)."""
    global _token, _token_pid
    pid = os.getpid()
    with _lock:
        if _token is None or _token_pid != pid:
            _token = {"pid": pid, "start": process_start(pid), "host": _host()}
            rank = _torch_rank()
            if rank is not None:
                _token["rank"] = rank
            _token_pid = pid
        return dict(_token)


def _torch_rank() -> int | None:
    """Return this process's rank under torchrun (its RANK; torchrun also sets TORCHELASTIC_RUN_ID), else None."""
    if not os.environ.get("TORCHELASTIC_RUN_ID"):
        return None
    try:
        return int(os.environ["RANK"])
    except (KeyError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Return True when a process with this pid exists (or may exist: no permission to ask)."""
    if pid <= 0 or pid > PID_LIMIT:
        return False  # no such process can exist (a crafted manifest or run dir name)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except (PermissionError, OSError):
        return True
    return True


def writer_alive(writer: dict[str, Any] | None, run_id: str | None = None) -> bool:
    """Return True while the process that wrote a run may still be writing it.

    With a `writer` record: a writer on another host is taken as alive (it cannot be
    asked; never delete what may still be written); on this host, its pid must exist
    and, when both start times are known, have started when the writer did. Without
    one (schema-1 manifests), the pid in the run id decides; when it is this process's
    pid, the run counts as ours only if its id is dated after tltrace was loaded here
    (pid 1 in a container is every run's pid).
    """
    if isinstance(writer, dict) and isinstance(writer.get("pid"), int):
        host = writer.get("host")
        if host and host != _host():
            return True
        pid = int(writer["pid"])
        if not pid_alive(pid):
            return False
        recorded = writer.get("start")
        if recorded is None:
            return True
        now = process_start(pid)
        return now is None or str(recorded) == now
    from_id = pid_of_run_id(run_id or "")
    if from_id is None:
        return False
    if from_id == os.getpid():
        made = time_of_id(run_id or "")
        return made is None or made >= _LOADED_AT - 2.0
    return pid_alive(from_id)


# -- the writer a manifest names (its `writer` field: pid, host, start, rank) ---------------------------
def pid_of(manifest: RunManifest) -> int | None:
    """Return the pid of the process that wrote a RunManifest, None where not known."""
    w = manifest.writer
    pid = w.get("pid") if isinstance(w, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def rank_of(manifest: RunManifest) -> int | None:
    """Return the torchrun rank of the process that wrote a RunManifest, None outside torchrun."""
    w = manifest.writer
    r = w.get("rank") if isinstance(w, dict) else None
    return r if isinstance(r, int) and not isinstance(r, bool) else None


def process_label(manifest: RunManifest) -> str:
    """Return the process a compile ran in, as a person reads it: 'rank R' under torchrun, else 'pid N'."""
    rank, pid = rank_of(manifest), pid_of(manifest)
    if rank is not None:
        return f"rank {rank}"
    return f"pid {pid}" if pid is not None else "pid ?"
