"""Bytes on disk: each text stored once whole (the run's texts.pack), the report holding a pass's output as its changes.

Real compiles (two invocations of a script that lowers two CPU kernels, html mode); the
report's texts, decoded as the page decodes them, are the stored texts; the Python source a
source map names is one file under the trace dir however many compiles name it; `clean`
leaves the kept compiles' reports, texts and sources whole.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from tltrace.diff import line_changes
from tltrace.format.records import CODEGEN
from tltrace.history import runs as history_runs
from tltrace.history import sourcemaps as sms
from tltrace.history.retention import clean
from tltrace.render.html import REPORT_NAME
from tltrace.render.pages import report_texts

from ._cli import script_traced
from ._records import copy_tree, pack_texts, run_dirs
from .conftest import EXAMPLES, wait_js

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {examples!r})
    import tilelang
    from tilelang import tvm
    from elementwise_add import make_add

    with tvm.target.Target("c"):
        for n in (256, 512):
            tilelang.lower(make_add(n, 128), target="c")
    """
)
_CHUNK = re.compile(rb'<script type="application/json" class="tl-d">(.*?)</script>\n', re.S)


def _chunks(path: Path) -> list[dict]:
    from tltrace.render.pages import chunk_values

    return [c for c in chunk_values(path.read_bytes()) if c is not None]


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> tuple[Path, Path]:
    """Two invocations of the script, `tltrace run -q --mode html --keep 5`; returns (script dir, script)."""
    tmp = tmp_path_factory.mktemp("storage")
    td = tmp / "traces"
    for _ in range(2):
        script, _ = script_traced(
            tmp,
            "two_adds.py",
            SCRIPT.format(examples=str(EXAMPLES)),
            "--mode",
            "html",
            "--keep",
            "5",
            trace_dir=td,
        )
    return td / "two_adds", script


def test_the_report_holds_a_pass_output_as_its_changes(traced) -> None:
    script_dir, _ = traced
    runs = run_dirs(script_dir)
    assert len(runs) == 4
    for run_dir in runs:
        manifest = history_runs.load_manifest(run_dir)
        chunks = _chunks(run_dir / REPORT_NAME)
        texts = report_texts(chunks)
        stored: dict[str, str] = {}
        inputs: dict[str, str] = {}  # a text -> the input of the pass that made it
        for rec in manifest.records:
            for side, digest in (("before", rec.before_hash), ("after", rec.after_hash)):
                if digest is not None:
                    stored[digest] = history_runs.text_of(run_dir, rec, side) or ""
            if rec.after_hash and rec.after_hash != rec.before_hash and rec.status != CODEGEN:
                inputs.setdefault(rec.after_hash, rec.before_hash or "")
        # the page rebuilds exactly the stored texts
        assert texts == stored
        # whole: the texts first met as a pass's input (the next record chunk names them as before)
        whole = set()
        for k, c in enumerate(chunks):
            if c.get("t") == "text" and "s" in c:
                rec = next(r for r in chunks[k:] if r.get("t") == "rec")
                if rec.get("before_hash") != c["h"]:
                    whole.add(c["h"])
        for digest in whole:
            base = inputs.get(digest)
            if base is None:
                continue  # codegen's source
            added, _, same = line_changes(stored[base], stored[digest])
            assert len(same) < added, f"{digest} shares most of its lines with its input yet is stored whole"
        in_report = sum(len(json.dumps(c)) for c in chunks if c.get("t") == "text")
        assert in_report < 0.6 * sum(len(t) for t in stored.values())


def test_a_source_a_map_names_is_stored_once_per_compile_in_its_pack(traced) -> None:
    script_dir, _ = traced
    runs = run_dirs(script_dir)
    sources = sms.load(runs[0]).sources
    assert sources  # the kernels' Python file, named by their maps
    for run_dir in runs:
        assert '"text"' not in (run_dir / sms.SOURCEMAP_LOG).read_text()
        assert sms.load(run_dir).sources == sources
    packs = {r / "texts.pack": pack_texts(r) for r in runs}  # each entry inflated (documented layout)
    for path, text in sources.items():
        assert text == Path(path).read_text()
        holders = []
        for root, _, files in os.walk(script_dir.parent):
            for name in files:
                p = Path(root) / name
                if name != REPORT_NAME and not p.is_symlink() and text.encode() in p.read_bytes():
                    holders.append(p)  # (a report carries what it shows: self-contained)
        holders += [p for p, texts in packs.items() if text in texts.values()]
        # One copy per compile, in its run's pack (texts are not shared across runs), deflated there.
        assert sorted(holders) == sorted(packs), holders
        assert all(list(packs[p].values()).count(text) == 1 for p in holders)


def test_clean_keeps_reports_texts_and_sources_of_the_kept_compiles(traced, tmp_path) -> None:
    script_dir, _ = traced
    (tmp_path / "traces").mkdir()
    copy = copy_tree(script_dir, tmp_path / "traces" / script_dir.name)
    result = clean([copy], keep=1)
    assert len(result.removed) == 2 and not result.failed
    kept = run_dirs(copy)
    assert len(kept) == 2
    for run_dir in kept:
        manifest = history_runs.load_manifest(run_dir)
        texts = report_texts(_chunks(run_dir / REPORT_NAME))
        for rec in manifest.records:
            for side, digest in (("before", rec.before_hash), ("after", rec.after_hash)):
                if digest is not None:
                    assert history_runs.text_of(run_dir, rec, side) == texts[digest]
        sources = sms.load(run_dir).sources
        assert sources and all(text == Path(path).read_text() for path, text in sources.items())


@pytest.mark.browser
def test_a_pass_stored_as_changes_shows_its_diff_after_clean_and_a_cut(traced, tmp_path, open_page) -> None:
    """The page rebuilds a delta-stored text: the diff of a changed pass shows its added lines."""
    script_dir, _ = traced
    (tmp_path / "traces").mkdir()
    copy = copy_tree(script_dir, tmp_path / "traces" / script_dir.name)
    clean([copy], keep=1)
    run_dir = run_dirs(copy)[-1]
    chunks = _chunks(run_dir / REPORT_NAME)
    deltas = {c["h"] for c in chunks if c.get("t") == "text" and "d" in c}
    manifest = history_runs.load_manifest(run_dir)
    rec = next(r for r in manifest.records if r.after_hash in deltas and r.added)
    # cut the report as a kill -9 would, inside the last chunk: the page still opens
    data = (run_dir / REPORT_NAME).read_bytes()
    cut = tmp_path / "cut.html"
    cut.write_bytes(data[: data.rindex(b"</script>") - 3])
    after = history_runs.text_of(run_dir, rec, "after") or ""
    for path in (run_dir / REPORT_NAME, cut):
        page = open_page(path, f"#{rec.index}")
        wait_js(page, "document.querySelector('table.tl-diff td.code.r.add')")
        shown = page.evaluate(
            "() => Array.from(document.querySelectorAll('table.tl-diff td.code.r')).map(t => t.textContent)"
        )
        assert [line for line in shown if line] == [line for line in after.split("\n") if line][
            : len(shown)
        ] or (all(line in after for line in shown))


def test_capture_bytes_counts_a_linked_text_once(tmp_path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "capture_bytes", Path(__file__).parent.parent / "bench" / "capture_bytes.py"
    )
    assert spec is not None and spec.loader is not None
    cb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cb)
    run = tmp_path / "s" / ".run_records" / "run_x"
    (run / "p").mkdir(parents=True)
    (tmp_path / "s" / ".run_records" / ".objects").mkdir()
    obj = tmp_path / "s" / ".run_records" / ".objects" / "abc"
    obj.write_text("x" * 1000)
    os.link(obj, run / "p" / "00_A_before.tir")
    os.link(obj, run / "p" / "00_A_after.tir")
    (run / "manifest.json").write_text("{}")
    size, _, _ = cb.measure(tmp_path)
    assert size["texts (.objects, .tir links)"] == 1000 and size["manifest.json"] == 2
