"""Run ids and invocation ids: the one grammar, its one parser, and the makers.

    run_<YYYYMMDD>_<HHMMSS>_<ffffff>Z_<pid>_<uid>     a run directory (one compile)
    inv_<YYYYMMDD>_<HHMMSS>_<ffffff>Z_<pid>_<uid>     an invocation (a manifest's `invocation`)

Ids carry their start time in UTC, marked with the "Z" after the microseconds, so that
they sort by an absolute time whatever the time zone (TZ, DST, a container and its host
sharing a trace dir). Ids written before that carry naive local time and no "Z"; they stay
readable (`time_of_id` reads them as local time), and ordering prefers the absolute
`started` of their manifests (history/loading.start_of). The microseconds were optional in
the oldest ids. Everything that reads an id goes through `parse_id`.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import uuid
from typing import NamedTuple

RUN_PREFIX = "run_"  # a run directory under .run_records
INVOCATION_PREFIX = "inv_"

# <prefix>_<date>_<time>[_<us>][Z][_<pid>_<rest>]: one pattern for every reader.
_ID = re.compile(r"^([a-z]+)_(\d{8})_(\d{6})(?:_(\d{6}))?(Z?)(?:_(\d+)_)?")


class IdParts(NamedTuple):
    """What an id says: its kind ("run", "inv"), its start, whether that is UTC, and its writer's pid."""

    prefix: str
    date: str  # YYYYMMDD
    time: str  # HHMMSS
    micros: int | None  # None: an id without microseconds
    utc: bool  # "Z": the time is UTC; else naive local time
    pid: int | None  # None: no pid part (only runs with microseconds carry one that is read)


def parse_id(identifier: str) -> IdParts | None:
    """Return the parts of a run or invocation id, or None when it is not one."""
    m = _ID.match(identifier)
    if m is None:
        return None
    pid = int(m.group(6)) if m.group(6) is not None and m.group(4) is not None else None
    micros = int(m.group(4)) if m.group(4) is not None else None
    return IdParts(m.group(1), m.group(2), m.group(3), micros, bool(m.group(5)), pid)


def _stamp(now: _dt.datetime | None) -> str:
    now = now.astimezone(_dt.timezone.utc) if now is not None else _dt.datetime.now(_dt.timezone.utc)
    return f"{now:%Y%m%d_%H%M%S_%f}Z"


def new_run_id(now: _dt.datetime | None = None) -> str:
    """Return a fresh run directory name: run_<YYYYMMDD_HHMMSS_ffffff>Z_<pid>_<uid> (UTC)."""
    return f"{RUN_PREFIX}{_stamp(now)}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def new_invocation_id(now: _dt.datetime | None = None) -> str:
    """Return a fresh invocation id: inv_<YYYYMMDD_HHMMSS_ffffff>Z_<pid>_<uid> (UTC; sorts by time)."""
    return f"{INVOCATION_PREFIX}{_stamp(now)}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def is_run_name(name: str) -> bool:
    """Return True for a name under .run_records that is a run directory's (`run_...`)."""
    return name.startswith(RUN_PREFIX)


def time_of_id(identifier: str) -> float | None:
    """Return the start time (epoch seconds) a run or invocation id encodes, or None.

    `<prefix>_YYYYMMDD_HHMMSS_ffffffZ_...` is UTC; without the "Z" (ids written before the
    UTC ids) the time is naive local time, read in this machine's zone.
    """
    parts = parse_id(identifier)
    if parts is None:
        return None
    try:
        t = _dt.datetime.strptime(parts.date + parts.time, "%Y%m%d%H%M%S")
        if parts.utc:
            t = t.replace(tzinfo=_dt.timezone.utc)
        stamp = t.timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return stamp + (parts.micros / 1e6 if parts.micros is not None else 0.0)


def id_time_is_absolute(identifier: str) -> bool:
    """Return True when an id's time is UTC (a "Z" id), False for a naive local one (or none)."""
    parts = parse_id(identifier)
    return bool(parts and parts.utc)


def uid_of_id(identifier: str) -> str | None:
    """Return the unique part an id ends with (`..._<pid>_<uid>`: the 8 hex digits), or None."""
    m = _ID.match(identifier)
    if m is None or m.group(6) is None:
        return None
    return identifier[m.end() :] or None


def pid_of_run_id(run_id: str) -> int | None:
    """Return the pid a run id names (run_<date>_<time>_<us>[Z]_<pid>_<uid>), or None."""
    parts = parse_id(run_id)
    return parts.pid if parts is not None and parts.prefix == "run" else None
