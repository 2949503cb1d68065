"""#32 item 8: the summary lines name the failed pass, the index, every working file and the size label."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from tltrace.format.records import PassRecord, RunManifest
from tltrace.render.terminal import stream_label, summary_line
from tltrace.session.signature import short_label

from ._cli import cli_proc


def test_a_failed_compiles_line_names_the_pass_it_failed_at(tmp_path):
    records = (
        PassRecord(0, "Simplify", "pipeline_c", status="changed"),
        PassRecord(1, "LayoutInference", "pipeline_c", status="failed", error="ValueError: no"),
    )
    m = RunManifest("run_x", "s", kernel="k", signature="k 256 f32 #ab", status="error", records=records)
    line = summary_line(m, tmp_path).plain
    assert "compile failed at LayoutInference: 2 passes" in line
    ok = RunManifest("run_y", "s", kernel="k", status="complete", records=records[:1])
    assert "done: 1 passes" in summary_line(ok, tmp_path).plain


def test_the_short_label_is_the_streams():
    m = RunManifest("run_x", "s", kernel="add", signature="add 512,512,512 f32 grid 4 thr 128 #ae45d0")
    assert short_label(m.kernel, m.signature) == stream_label(m) == "add 512"
    assert short_label("add", None) == "add" and short_label(None, None) == "?"


POOL = textwrap.dedent(
    """
    import os, sys
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    sys.path.insert(0, {examples!r})

    def build(n):
        import tilelang
        from elementwise_add import make_add
        from _common import compile_kwargs
        tilelang.compile(make_add(n, 128), **compile_kwargs())
        return n

    if __name__ == "__main__":
        with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
            print(list(ex.map(build, [256, 512])))
    """
)


@pytest.mark.compile
def test_a_process_pool_run_lists_its_working_files_and_its_index(examples_dir, tmp_path):
    """-q --mode both, two compiles in two worker processes: the closing lines name every working
    file the workers wrote (with its variant), the index, and NEW lines carry the size label."""
    script = tmp_path / "pool.py"
    script.write_text(POOL.format(examples=str(examples_dir)))
    p = cli_proc("run", "-q", "--mode", "both", script, cwd=tmp_path, PYTHONPATH=os.pathsep.join(sys.path))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    sd = tmp_path / "tmp" / "lower_trace_dir" / "pool"
    manifests = [json.loads((d / "manifest.json").read_text()) for d in (sd / ".run_records").glob("run_*")]
    assert len({m["writer"]["pid"] for m in manifests}) == 2  # two worker processes compiled
    written = {r["working_file"] for m in manifests for r in m["records"] if r.get("working_file")}
    assert len(written) == 2
    listing = out.split("working files", 1)[1]
    for path in written:
        assert Path(path).name in listing
    head = next(ln for ln in out.splitlines() if re.match(r"2 compiles, 0 failed", ln))
    index = head.split("index: ", 1)[1].split()[0]
    assert (tmp_path / index).resolve() == (sd / "report.html").resolve()
    labels = {
        stream_label(RunManifest(m["run_id"], "pool", kernel=m["kernel"], signature=m["signature"]))
        for m in manifests
    }
    for label in labels:
        assert f"[{label}] NEW" in out, out
