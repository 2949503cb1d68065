"""A bundle's zip file, read with its sizes, integrity and types checked before anything else.

A bundle comes from someone else, so nothing in it is taken on trust:

- the file is a regular file; the zip's end record is read first and a central directory
  of more than MAX_MEMBERS entries (or MAX_DIRECTORY_BYTES) is refused before
  `zipfile` builds one object per entry;
- the sizes the directory declares are capped per member (by its role: MEMBER_CAPS), in
  total (MAX_TOTAL_BYTES) and in compression ratio (MAX_RATIO, per member and overall): a
  zip bomb is refused from its directory, before one byte is inflated (`zipfile` never
  inflates a member past its declared size);
- every member is then inflated once, in 1 MiB pieces and thrown away, to check its
  CRC: one flipped byte anywhere is found before the replay starts;
- the JSON members are parsed under their cap and checked against their shape
  (bundle_info, json_member).

Every failure is a RecordsError (exit 3) naming the bundle and what is wrong with it.
Member names are never used as paths. Pure reading; nothing here prints.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
import zipfile
from pathlib import Path
from typing import Any

from ..errors import RecordsError, UsageError
from ..format.layout import MANIFEST
from ..format.names import safe_component

MIB = 1024 * 1024
MAX_MEMBERS = 100_000
MAX_DIRECTORY_BYTES = 64 * MIB
MAX_TOTAL_BYTES = 1024 * MIB  # all members, inflated
MAX_RATIO = 200  # inflated : compressed, for a member over 1 MiB and for the whole bundle over 16 MiB
MEMBER_CAPS = {  # the most a member of each role may hold, inflated
    "bundle.json": 16 * MIB,
    MANIFEST: 64 * MIB,
    "context.json": 1 * MIB,
    "frontend.json": 256 * MIB,  # streamed to a file, one compile at a time
    "text": 256 * MIB,  # a recorded text, read for the diff of a divergent pass
    "other": 16 * MIB,
}
CHUNK = MIB


def cap_of(name: str) -> int:
    """Return the size cap of the member `name` (by its role)."""
    base = name.rsplit("/", 1)[-1]
    if name.startswith("texts/"):
        return MEMBER_CAPS["text"]
    return MEMBER_CAPS.get(base, MEMBER_CAPS["other"])


def open_bundle(path: Path) -> zipfile.ZipFile:
    """Open the zip at `path` with its directory, sizes and every member's CRC checked; RecordsError if not."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"no bundle file {path}; make one with 'tltrace bundle SCRIPT -o FILE'") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{path} is not a file; give the bundle file 'tltrace bundle' wrote")
    try:
        fp = open(path, "rb")  # noqa: SIM115 (the ZipFile owns it from here)
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror or exc})") from None
    try:
        entries, directory = _end_record(fp)
        if entries > MAX_MEMBERS or directory > MAX_DIRECTORY_BYTES:
            raise RecordsError(
                f"{path}: {entries} members in a {directory} byte directory; a bundle holds at most {MAX_MEMBERS}"
            )
        zf = zipfile.ZipFile(fp)
    except RecordsError:
        fp.close()
        raise
    except Exception as exc:
        fp.close()
        raise RecordsError(f"{path} is not a tltrace bundle ({_why(exc)})") from None
    try:
        check_sizes(zf.infolist(), path)
        check_integrity(zf, path)
    except BaseException:
        zf.close()
        raise
    return zf


def _end_record(fp: Any) -> tuple[int, int]:
    """Return (entries, central directory bytes) from the zip's end record (zip64's when it has one)."""
    fp.seek(0, os.SEEK_END)
    size = fp.tell()
    n = min(size, 22 + 0xFFFF)
    fp.seek(size - n)
    tail = fp.read(n)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise zipfile.BadZipFile("no end of central directory record")
    entries, directory = struct.unpack("<HI", tail[at + 10 : at + 16])
    if entries == 0xFFFF or directory == 0xFFFFFFFF:  # zip64: the locator sits right before the record
        where = size - n + at - 20
        if where >= 0:
            fp.seek(where)
            loc = fp.read(20)
            if loc[:4] == b"PK\x06\x07":
                (offset,) = struct.unpack("<Q", loc[8:16])
                fp.seek(offset)
                rec = fp.read(56)
                if rec[:4] == b"PK\x06\x06" and len(rec) == 56:
                    entries, directory = struct.unpack("<QQ", rec[32:48])
    fp.seek(0)
    return entries, directory


def check_sizes(infos: list[zipfile.ZipInfo], path: Path | str) -> None:
    """Refuse (RecordsError) a member over its cap or ratio, or members over the total or ratio caps."""
    total = packed = 0
    for info in infos:
        name = _shown(info.filename)
        if info.file_size > cap_of(info.filename):
            raise RecordsError(
                f"{path}: member {name} would inflate to {info.file_size} bytes, over its "
                f"{cap_of(info.filename)}; not read (a zip bomb?)"
            )
        if info.file_size > MIB and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise RecordsError(
                f"{path}: member {name} inflates {ratio}:1, over {MAX_RATIO}:1; not read (a zip bomb?)"
            )
        total += info.file_size
        packed += info.compress_size
    if total > MAX_TOTAL_BYTES:
        raise RecordsError(
            f"{path}: the members would inflate to {total} bytes in all, over {MAX_TOTAL_BYTES}; not read (a zip bomb?)"
        )
    if total > 16 * MIB and total > MAX_RATIO * max(packed, 1):
        raise RecordsError(
            f"{path}: the members inflate {total // max(packed, 1)}:1 in all, over {MAX_RATIO}:1; "
            "not read (a zip bomb?)"
        )


def check_integrity(zf: zipfile.ZipFile, path: Path | str) -> None:
    """Inflate every member once (in pieces, kept nowhere) to check its CRC; RecordsError on the first bad one."""
    for info in zf.infolist():
        try:
            with zf.open(info) as f:
                while f.read(CHUNK):
                    pass
        except Exception as exc:
            raise RecordsError(f"{path}: member {_shown(info.filename)} is damaged ({_why(exc)})") from None


def read_member(zf: zipfile.ZipFile, name: str, path: Path | str) -> bytes:
    """Return the bytes of member `name` (under its cap); KeyError when absent, RecordsError when unreadable."""
    info = zf.getinfo(name)
    if info.file_size > cap_of(name):
        raise RecordsError(f"{path}: member {_shown(name)} is {info.file_size} bytes; not read")
    try:
        with zf.open(info) as f:
            return f.read(cap_of(name) + 1)[: cap_of(name)]
    except Exception as exc:
        raise RecordsError(f"{path}: member {_shown(name)} is damaged ({_why(exc)})") from None


def copy_member(zf: zipfile.ZipFile, name: str, dest: Path, path: Path | str) -> None:
    """Write member `name` to the file `dest` in pieces (never whole in memory); RecordsError when unreadable."""
    info = zf.getinfo(name)
    if info.file_size > cap_of(name):
        raise RecordsError(f"{path}: member {_shown(name)} is {info.file_size} bytes; not read")
    try:
        with zf.open(info) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
    except OSError as exc:
        if isinstance(exc, zipfile.BadZipFile):
            raise RecordsError(f"{path}: member {_shown(name)} is damaged ({_why(exc)})") from None
        raise RecordsError(f"cannot write {dest} ({exc.strerror or exc})") from None
    except Exception as exc:
        raise RecordsError(f"{path}: member {_shown(name)} is damaged ({_why(exc)})") from None


def json_member(zf: zipfile.ZipFile, name: str, path: Path | str, shape: type) -> Any:
    """Return member `name` parsed as JSON, checked to be a `shape` (dict or list); RecordsError otherwise."""
    try:
        data = read_member(zf, name, path)
    except KeyError:
        raise RecordsError(f"{path} has no {_shown(name)}; not a tltrace bundle, or a damaged one") from None
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise RecordsError(f"{path}: {_shown(name)} is not JSON ({_why(exc)})") from None
    if not isinstance(value, shape):
        raise RecordsError(
            f"{path}: {_shown(name)} is {_a(value)}, not {'an object' if shape is dict else 'a list'}"
        )
    return value


def bundle_info(info: dict[str, Any], path: Path | str, schema: int) -> list[dict[str, Any]]:
    """Check bundle.json's fields that a replay uses; return its compile entries (each checked)."""
    if info.get("schema") != schema or isinstance(info.get("schema"), bool):
        raise RecordsError(f"{path}: bundle schema {_short(info.get('schema'))} is not {schema}")
    for key in ("tilelang", "tltrace", "script", "invocation"):
        if info.get(key) is not None and not isinstance(info.get(key), str):
            raise RecordsError(f"{path}: bundle.json's {key} is {_a(info[key])}, not a string")
    command = info.get("command")
    if command is not None and not (isinstance(command, list) and all(isinstance(c, str) for c in command)):
        raise RecordsError(f"{path}: bundle.json's command is not a list of strings")
    compiles = info.get("compiles")
    if not isinstance(compiles, list):
        raise RecordsError(f"{path}: bundle.json's compiles is {_a(compiles)}, not a list")
    if not compiles:
        raise RecordsError(f"{path}: the bundle holds no compile")
    seen: set[str] = set()
    for n, entry in enumerate(compiles):
        if not isinstance(entry, dict):
            raise RecordsError(f"{path}: bundle.json's compile #{n} is {_a(entry)}, not an object")
        d = entry.get("dir")
        if not isinstance(d, str) or not d or safe_component(d) != d or d in seen:
            raise RecordsError(f"{path}: bundle.json's compile #{n} has a bad dir {_short(d)}")
        seen.add(d)
        for key in ("run_id", "kernel", "signature"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise RecordsError(f"{path}: compile {d}'s {key} is {_a(entry[key])}, not a string")
        flags = entry.get("flags")
        if flags is not None and not (
            isinstance(flags, dict)
            and all(isinstance(k, str) and isinstance(v, bool) for k, v in flags.items())
        ):
            raise RecordsError(f"{path}: compile {d}'s flags are not true/false values")
    return compiles


def _a(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), f"a {type(value).__name__}")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _shown(name: str) -> str:
    return name if len(name) <= 120 else name[:117] + "..."


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
