"""Malformed bundles, zip bombs, control characters and --trace-dir: one line and the documented exit code.

Each case starts from tests/data/bundle_0.1.15_add.zip (a real CPU bundle) with one member
changed. The six malformed cases of issue 27 (bundle.json as [] or "x", compiles as a list
of strings or a dict, manifest.json as [1,2], one flipped byte) are refused before any child
starts; a frontend IR that does not load is refused after its child said so. The bomb is
measured in a subprocess: peak memory (ru_maxrss) and what is left in a private TMPDIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from tltrace.rerun import archive

from ._cli import cli_proc, one_line_error, py_proc

DATA = Path(__file__).resolve().parent / "data" / "bundle_0.1.15_add.zip"
MANIFEST = "compiles/00_add/manifest.json"
FRONTEND = "compiles/00_add/frontend.json"


def _rewrite(dest: Path, changes: dict[str, bytes | None], src: Path = DATA) -> Path:
    """Copy the bundle with the members in `changes` replaced (None: removed)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        zout.comment = zin.comment
        for info in zin.infolist():
            if info.filename in changes:
                if changes[info.filename] is not None:
                    zout.writestr(info, changes[info.filename])
            else:
                zout.writestr(info, zin.read(info))
    return dest


def _info(**changes) -> bytes:
    with zipfile.ZipFile(DATA) as zf:
        info = json.loads(zf.read("bundle.json"))
    info.update(changes)
    return json.dumps(info).encode()


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"bundle.json": b"[]"}, ("bundle.json is a list, not an object",)),
        ({"bundle.json": b'"x"'}, ("bundle.json is a string, not an object",)),
        ({"bundle.json": _info(compiles=["00_add"])}, ("compile #0 is a string",)),
        (
            {"bundle.json": _info(compiles={"00_add": {"dir": "00_add"}})},
            ("compiles is an object, not a list",),
        ),
        ({MANIFEST: b"[1,2]"}, ("manifest.json is a list, not an object",)),
        ({"bundle.json": b"{"}, ("bundle.json is not JSON",)),
        ({"bundle.json": _info(compiles=[{"dir": "../x"}])}, ("bad dir",)),
        (
            {"bundle.json": _info(compiles=[{"dir": "00_add", "flags": {"device_compile": "yes"}}])},
            ("flags",),
        ),
        ({"bundle.json": _info(compiles=[])}, ("holds no compile",)),
        ({"bundle.json": _info(schema=True)}, ("schema",)),
        ({MANIFEST: b'{"schema_version": 3, "records": 5}'}, ("manifest.json is damaged",)),
        ({"compiles/00_add/context.json": b"[]"}, ("context.json is a list",)),
        ({"compiles/00_add/context.json": b'{"opt_level": "2", "target": {"kind": "c"}}'}, ("opt_level",)),
        ({FRONTEND: None}, ("no frontend.json",)),
        ({"bundle.json": None}, ("no bundle.json",)),
    ],
    ids=[
        "bundle-list",
        "bundle-string",
        "compiles-strings",
        "compiles-dict",
        "manifest-list",
        "bundle-not-json",
        "dir-escapes",
        "flags-not-bool",
        "no-compiles",
        "schema-bool",
        "records-int",
        "context-list",
        "opt-level-string",
        "no-frontend",
        "no-bundle-json",
    ],
)
def test_a_member_of_the_wrong_type_is_one_line_exit_3(run_cli, tmp_path: Path, changes, words) -> None:
    bundle = _rewrite(tmp_path / "b.zip", changes)
    r = run_cli("replay", str(bundle))
    one_line_error(r, 3, *words)
    assert r.stdout == ""


def _data_offset(bundle: Path, name: str) -> tuple[int, int]:
    """Return (where member `name`'s compressed data starts in the file, its length)."""
    with zipfile.ZipFile(bundle) as zf:
        info = zf.getinfo(name)
    raw = bundle.read_bytes()
    at = info.header_offset
    n, m = int.from_bytes(raw[at + 26 : at + 28], "little"), int.from_bytes(raw[at + 28 : at + 30], "little")
    return at + 30 + n + m, info.compress_size


@pytest.mark.parametrize(
    "member", ["bundle.json", MANIFEST, FRONTEND, "texts/eb7ef4feac601b79f690", "README.md"]
)
def test_one_flipped_byte_is_one_line_exit_3(run_cli, tmp_path: Path, member: str) -> None:
    bundle = tmp_path / "b.zip"
    raw = bytearray(DATA.read_bytes())
    start, size = _data_offset(DATA, member)
    raw[start + size // 2] ^= 0x01
    bundle.write_bytes(bytes(raw))
    r = run_cli("replay", str(bundle))
    one_line_error(r, 3, member)


def test_a_flipped_byte_in_the_directory_is_one_line_exit_3(run_cli, tmp_path: Path) -> None:
    raw = bytearray(DATA.read_bytes())
    at = raw.rfind(b"PK\x01\x02")  # the last central directory entry: its signature damaged
    raw[at + 1] ^= 0x01
    (tmp_path / "b.zip").write_bytes(bytes(raw))
    one_line_error(run_cli("replay", str(tmp_path / "b.zip")), 3, "not a tltrace bundle")


@pytest.mark.compile
@pytest.mark.parametrize(
    "frontend",
    [b'{"root": 1, "nodes": [], "b64ndarrays": []}', b"not json at all", b"\xff\xfe\x00garbage"],
    ids=["json-not-ir", "not-json", "not-utf8"],
)
def test_a_frontend_ir_that_does_not_load_is_a_damaged_bundle(tmp_path: Path, frontend: bytes) -> None:
    """Exit 3 (damaged), not 5 (which names an operator this TileLang lacks); no copy left in TMPDIR."""
    bundle = _rewrite(tmp_path / "b.zip", {FRONTEND: frontend})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = _tltrace(tmp_path, tmp, "replay", str(bundle))
    assert p.returncode == 3, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "does not load (a damaged bundle)" in p.stderr
    assert "Traceback" not in p.stderr
    assert not list(tmp.iterdir())


@pytest.mark.compile
def test_replay_leaves_no_work_dir_behind(tmp_path: Path) -> None:
    """With and without --trace-dir: nothing of the bundle stays in TMPDIR; the records only in DIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = _tltrace(tmp_path, tmp, "replay", str(DATA), "--trace-dir", "kept")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not list(tmp.iterdir())
    assert list((tmp_path / "kept").glob("*/.run_records/run_*/manifest.json"))
    p = _tltrace(tmp_path, tmp, "replay", str(DATA))
    assert p.returncode == 0, p.stdout + p.stderr
    assert not list(tmp.iterdir())


@pytest.mark.parametrize("kind", ["file", "under-a-file", "empty", "fifo"])
def test_a_trace_dir_that_is_not_a_directory_is_a_usage_error(run_cli, tmp_path: Path, kind: str) -> None:
    (tmp_path / "f").write_text("mine")
    value = {"file": "f", "under-a-file": "f/sub", "empty": "", "fifo": "fifo"}[kind]
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
    r = run_cli("replay", str(DATA), "--trace-dir", value)
    one_line_error(r, 2, "--trace-dir")
    assert r.stdout == "" and (tmp_path / "f").read_text() == "mine"


def _renamed(tmp_path: Path, name: str) -> Path:
    """The bundle with its compile's kernel called `name` (in its manifest and in bundle.json)."""
    with zipfile.ZipFile(DATA) as zf:
        manifest = json.loads(zf.read(MANIFEST))
        info = json.loads(zf.read("bundle.json"))
    manifest["kernel"] = info["compiles"][0]["kernel"] = name
    return _rewrite(
        tmp_path / "b.zip",
        {MANIFEST: json.dumps(manifest).encode(), "bundle.json": json.dumps(info).encode()},
    )


@pytest.mark.compile
def test_control_characters_in_a_kernel_name_are_shown_not_sent(run_cli, tmp_path: Path) -> None:
    name = "add\x1b]0;owned\x07\x1b[2J"
    r = run_cli("replay", str(_renamed(tmp_path, name)))
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\x07" not in r.output
    assert "add^[]0;owned^G^[[2J: same: " in r.stdout


@pytest.mark.compile
def test_a_newline_in_a_kernel_name_cannot_forge_a_line(run_cli, tmp_path: Path) -> None:
    """A bundle's kernel name holding a newline (or U+2028) prints on its compile's line, spelt
    `^J`: no line of the output is one the bundle wrote."""
    name = "add\nreplay records: /forged\u2028x"
    r = run_cli("replay", str(_renamed(tmp_path, name)))
    assert r.exit_code == 0, r.output
    assert not any(line.startswith("replay records: /forged") for line in r.output.splitlines())
    assert "add^Jreplay records: /forged<U+2028>x" in r.stdout and "\u2028" not in r.output


def _tltrace(cwd: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, TMPDIR=str(tmp))


def _bomb(dest: Path, members: dict[str, int]) -> Path:
    """The bundle plus members of `size` zero bytes each (a zip bomb: each deflates about 1000:1)."""
    chunk = b"\0" * (1 << 20)
    with zipfile.ZipFile(DATA) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        zout.comment = zin.comment
        for info in zin.infolist():
            if info.filename not in members:
                zout.writestr(info, zin.read(info))
        for name, size in members.items():
            with zout.open(name, "w", force_zip64=True) as f:
                for _ in range(size >> 20):
                    f.write(chunk)
    return dest


# Peak memory of the process itself: VmHWM belongs to the address space exec made (ru_maxrss of
# RUSAGE_SELF does not: Linux carries the forking parent's peak across exec). ru_maxrss of
# RUSAGE_CHILDREN is 0 while no child process has been started.
MEASURE = """
import resource, runpy, sys
sys.argv = ["tltrace", "replay", sys.argv[1]]
code = 0
try:
    runpy.run_module("tltrace", run_name="__main__")
except SystemExit as exc:
    code = exc.code
with open("/proc/self/status") as f:
    peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
with open(sys.argv[-1] + ".rss", "w") as f:
    f.write(peak + " " + str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


@pytest.mark.parametrize(
    "members",
    [
        {FRONTEND: 250 << 20},  # one member, under its cap, inflating 1000:1
        {f"texts/{n:020x}": 1 << 20 for n in range(900)},  # 900 small members: 900 MiB in all
        {FRONTEND: 512 << 20},  # over the member cap
    ],
    ids=["one-member", "many-members", "over-the-cap"],
)
def test_a_zip_bomb_is_refused_from_its_directory_in_small_memory(tmp_path: Path, members) -> None:
    bomb = _bomb(tmp_path / "bomb.zip", members)
    assert bomb.stat().st_size < 2 << 20
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = py_proc("-c", MEASURE, bomb, cwd=tmp_path, rc=3, TMPDIR=str(tmp))
    assert p.stderr.count("\n") == 1 and "zip bomb" in p.stderr and "Traceback" not in p.stderr
    own, children = (int(v) for v in Path(str(bomb) + ".rss").read_text().split())
    assert own < 300 * 1024 and children == 0  # KiB: under 300 MB, and no child started
    assert not list(tmp.iterdir())


def test_the_caps_are_on_the_total_too() -> None:
    """Members each under their cap and ratio, over MAX_TOTAL_BYTES together."""
    from tltrace.errors import RecordsError

    infos = []
    for n in range(5):
        info = zipfile.ZipInfo(f"texts/{n:020x}")
        info.file_size, info.compress_size = 250 << 20, 125 << 20
        infos.append(info)
    with pytest.raises(RecordsError, match="in all, over"):
        archive.check_sizes(infos, "b.zip")
    archive.check_sizes(infos[:4], "b.zip")  # 1000 MiB: under the cap


def test_too_many_members_are_refused_before_the_directory_is_read(run_cli, tmp_path: Path) -> None:
    """Over MAX_MEMBERS (a zip64 directory, as zipfile writes past 65535 members): refused from the end record."""
    bundle = tmp_path / "many.zip"
    with zipfile.ZipFile(bundle, "w") as zf:
        for n in range(archive.MAX_MEMBERS + 1):
            zf.writestr(f"{n:x}", b"")
    r = run_cli("replay", str(bundle))
    one_line_error(r, 3, f"{archive.MAX_MEMBERS + 1} members")
