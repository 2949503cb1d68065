"""The report model (#50 item 5): history/ reads a run into it, render/ turns it into HTML reading nothing.

Two holds: render's report modules import no reader of history/ or format/ (their import
statements, function level included), and a report or index written from a model after
its trace dir is gone is byte for byte the one written while it was there (so the writer
read nothing of it). The model is read from the recorded traces, given a source map and
a compiled edit written here through the format's own codecs, so that every part of the
report (texts, maps and their Python source, the generated source, the switcher, the
earlier invocations) is in it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from tltrace.format.layout import text_hash
from tltrace.format.sourcemap import LineMap, map_line, rec_line, src_line
from tltrace.history.report_model import Earlier, Text
from tltrace.history.report_reads import compile_report, index_report
from tltrace.render.html import REPORT_NAME, HtmlReportListener, write_report
from tltrace.render.index import write_index
from tltrace.session.events import PassRecorded

from ._records import read_manifest, recorded_subset, run_dirs
from .synthetic import synthetic_events

PKG = Path(__file__).resolve().parent.parent / "tltrace"
# render/'s report path: the listener and the writers, the pages and their chunks.
REPORT_MODULES = ("html", "pages", "index", "sourcemap", "delta", "bundle", "safejson")
# What render may take from history/: the model, and the summaries an index row is computed from
# (functions of a manifest, no reads).
HISTORY_ALLOWED = {"tltrace.history.report_model", "tltrace.history.summary", "tltrace.history.profile"}
# Readers elsewhere: a file read of the records, or of a source a map names.
READERS = {("tltrace.format.sourcemap", "read_source"), ("tltrace.format.scripts", "load_registry")}

SOURCE = "import tilelang\n\n\ndef kernel():\n    return 1\n"
GENERATED = "// the source TileLang generated, before the edit\nint main() { return 0; }\n"


def _imports(path: Path, module: str) -> list[tuple[str, str | None]]:
    """(module, name) of every import in a module's source, at any level, relative ones resolved."""
    out: list[tuple[str, str | None]] = []
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.extend((base, a.name) for a in node.names)
    return out


def test_the_report_modules_import_no_reader() -> None:
    checked = 0
    for name in REPORT_MODULES:
        path = PKG / "render" / f"{name}.py"
        for mod, attr in _imports(path, f"tltrace.render.{name}"):
            if mod == "tltrace.history":  # `from ..history import runs` imports a module
                mod, attr = f"{mod}.{attr}", None
            if mod.startswith("tltrace.history."):
                assert mod in HISTORY_ALLOWED, (
                    f"render/{name}.py imports {mod}: the report reads through its model"
                )
            assert (mod, attr) not in READERS, f"render/{name}.py imports {mod}.{attr}: a reader"
            checked += 1
    assert checked > 20  # the imports were found (an empty walk would pass)


def _add_source_map(run: Path) -> None:
    """Give a recorded run a source map of its first record's texts, with the Python source inline."""
    m = read_manifest(run)
    rec = m["records"][0]
    lmap = LineMap(("/work/kernel.py",), (None, (0, 4), 0))
    digest = lmap.digest()
    lines = [
        map_line(digest, lmap),
        src_line("/work/kernel.py", SOURCE),
        rec_line(rec["index"], digest, digest),
    ]
    (run / "sourcemap.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def _add_compiled_edit(run: Path) -> None:
    """Give a recorded run a compiled edit of its codegen (the manifest's `build`, format/build.py)."""
    data = json.loads((run / "manifest.json").read_text())
    codegen = next(r for r in data["records"] if r.get("status") == "codegen")
    (run / "codegen").mkdir(exist_ok=True)
    (run / "codegen" / "gen.cpp").write_text(GENERATED)
    data["build"] = {
        "version": 1,
        "edits": [
            {
                "record": codegen["index"],
                "role": "device",
                "working_file": "/work/codegen_device.cpp",
                "generated_file": "codegen/gen.cpp",
                "generated_hash": text_hash(GENERATED),
                "added": 1,
                "removed": 1,
                "compiled": True,
            }
        ],
    }
    (run / "manifest.json").write_text(json.dumps(data))


def _chunks(data: bytes) -> list[dict]:
    from tltrace.render.pages import chunk_values

    return [c for c in chunk_values(data) if c is not None]


@pytest.fixture
def traces(recorded: Path, tmp_path: Path) -> Path:
    td = recorded_subset(recorded, tmp_path / "traces", elementwise_add=slice(0, 3), two_kernels=None)
    first, second, third = run_dirs(td / "elementwise_add")
    for run in (first, second):  # earlier invocations with a report: "Compare with…" offers them
        write_report(compile_report(run))
    _add_source_map(third)
    _add_compiled_edit(third)
    return td


def test_a_report_written_from_its_model_reads_nothing(traces: Path, tmp_path: Path) -> None:
    third = run_dirs(traces / "elementwise_add")[-1]
    sibling = run_dirs(traces / "two_kernels")[-1]
    models = [compile_report(third), compile_report(sibling)]
    index = index_report(traces / "two_kernels", run_dirs(traces / "two_kernels")[-2:])
    before = [write_report(m).read_bytes() for m in models]
    before_index = write_index(index, tmp_path / "index.html").read_bytes()

    # The model holds every part of the report: each made here, each found in the page.
    got = _chunks(before[0])
    texts = {c.get("s") for c in got if c["t"] == "text"}
    assert GENERATED in texts
    assert {"t": "src", "path": "/work/kernel.py", "s": SOURCE} in got
    assert any(c["t"] == "smap" for c in got) and any(c["t"] == "srec" for c in got)
    earlier = next(c for c in got if c["t"] == "earlier")
    assert [r[0] for r in earlier["runs"]] == [d.name for d in run_dirs(traces / "elementwise_add")[1::-1]]
    sibs = next(c for c in _chunks(before[1]) if c["t"] == "sibs")
    assert [r[0] for r in sibs["runs"]] == [d.name for d in run_dirs(traces / "two_kernels")[-2:]]

    shutil.move(traces, tmp_path / "elsewhere")  # the records are gone: nothing is left to read
    assert [write_report(m).read_bytes() for m in models] == before
    assert write_index(index, tmp_path / "index2.html").read_bytes() == before_index
    assert sorted(p.name for p in third.iterdir()) == ["report.html"]  # only what was written


def test_the_rebuilt_report_is_the_one_written_from_the_model(traces: Path, tmp_path: Path) -> None:
    """A model read twice gives the same bytes (no state left between reads), in place and elsewhere."""
    third = run_dirs(traces / "elementwise_add")[-1]
    a = write_report(compile_report(third), tmp_path / "a.html").read_bytes()
    b = write_report(compile_report(third, linked=False), tmp_path / "b.html").read_bytes()
    assert a == b  # written elsewhere: no switcher, no earlier compiles, no index link either way
    assert not any(c["t"] in ("earlier", "sibs") or (c["t"] == "meta" and "index" in c) for c in _chunks(a))


class _Reads:
    """A live report's reads (history/report_reads.LiveReads' interface), answering what this test made."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def generated(self, run_dir: Path, manifest) -> list[Text]:
        self.asked.append("generated")
        return [Text(text_hash(GENERATED), GENERATED)]

    def earlier(self, script_dir: Path, invocation: str, before: str) -> list[Earlier]:
        self.asked.append("earlier")
        return [Earlier("run_then", "synthetic_kernel", "then"), Earlier("run_other", "other", "other")]

    def source(self, path: str) -> str | None:
        self.asked.append("source")
        return SOURCE if path == "/work/kernel.py" else None

    def fail_site(self, run_dir: Path, manifest) -> dict | None:
        return None  # nothing failed here (a failed compile's site: tests/test_sourcemap.py)

    def launches(self, script_dir: Path, invocation: str) -> dict[str, tuple[tuple[dict, ...], int]]:
        self.asked.append("launches")
        row = {"n": 1, "site": ["/work/k.py", 3], "grid": [2], "block": [64], "args": []}
        return {run.name: ((row,), 4) for run in (Path(script_dir) / ".run_records").glob("run_*")}


@pytest.mark.parametrize("given", [True, False])
def test_the_live_report_asks_its_reads_and_reads_nothing_without(tmp_path: Path, given: bool) -> None:
    """The listener's report during a compile: the generated source, the earlier compiles, the launches
    and a map's Python source come from the reads it is handed, and only from them."""
    reads = _Reads()
    listener = HtmlReportListener(reads=reads if given else None)
    lmap = LineMap(("/work/kernel.py",), (None, (0, 4), 0))
    run_dir = None
    for event in synthetic_events(12, tmp_path / "s", invocation="inv-1"):
        if isinstance(event, PassRecorded) and event.record.index == 0:
            event = dataclasses.replace(event, before_map=lmap, after_map=lmap)
        run_dir = getattr(event, "run_dir", run_dir)
        listener(event)
    listener.close()
    assert run_dir is not None
    got = _chunks((Path(run_dir) / REPORT_NAME).read_bytes())
    assert any(c["t"] == "smap" for c in got)  # the maps come with the events either way
    sources = [c for c in got if c["t"] == "src"]
    earlier = [c for c in got if c["t"] == "earlier"]
    generated = [c for c in got if c["t"] == "text" and c.get("s") == GENERATED]
    launches = [c for c in got if c["t"] == "launches"]
    if given:
        assert sorted(reads.asked) == ["earlier", "generated", "launches", "source"]
        row = reads.launches(Path(run_dir).parent.parent, "inv-1")[Path(run_dir).name][0][0]
        assert launches == [{"t": "launches", "rows": [row], "more": 4}]
        assert sources == [{"t": "src", "path": "/work/kernel.py", "s": SOURCE}]
        assert earlier == [{"t": "earlier", "runs": [["run_then", "then"]]}]  # its kernel's only
        assert len(generated) == 1
    else:
        assert (sources, earlier, generated, launches) == ([], [], [], [])


def test_live_reads_give_a_sources_text_as_it_is_on_disk(tmp_path: Path) -> None:
    """LiveReads keeps the Python sources it read (one per process, for every compile's report):
    each answer is still the file's text as it is now, after an edit of another length, after one of
    the same length (a new modification time) and after the file was replaced; a file gone or not a
    file gives none."""
    import os

    from tltrace.history.report_reads import LiveReads

    reads = LiveReads()
    src = tmp_path / "k.py"
    src.write_text("x = 1\n")
    assert reads.source(str(src)) == reads.source(str(src)) == "x = 1\n"
    src.write_text("x = 22\n")
    assert reads.source(str(src)) == "x = 22\n"
    st = src.stat()
    src.write_text("x = 33\n")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert reads.source(str(src)) == "x = 33\n"
    other = tmp_path / "k2.py"
    other.write_text("y = 44\n")
    os.replace(other, src)
    assert reads.source(str(src)) == "y = 44\n"
    src.unlink()
    assert reads.source(str(src)) is None
    assert reads.source(str(tmp_path)) is None
