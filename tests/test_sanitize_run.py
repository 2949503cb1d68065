"""`tltrace run --sanitize` end to end.

On the CPU there is no compute-sanitizer (it needs a GPU): a stand-in on PATH takes its place, runs
the command line it is given (the real `tltrace run --sass` child, which lowers the out-of-bounds
kernel for sm_90a) and saves the report compute-sanitizer wrote for that kernel on an H100
(tests/data/sanitizer). The parent names the error at the script's store (found with ast) and checks
compute-sanitizer's pc against the SASS the child recorded. On a GPU (`gpu`): the real
compute-sanitizer over the real out-of-bounds launch.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from ._cli import cli_env
from ._kernels import OOB_LOWERED
from ._records import pack_texts, run_dirs
from .test_sanitizer import DATA, store_line

STAND_IN = """
import json, os, shutil, subprocess, sys
a = sys.argv[1:]
save = a[a.index("--save") + 1]
with open(os.environ["STAND_IN_LOG"], "w") as f:
    json.dump({"argv": a, "caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING")}, f)
code = subprocess.call(a[a.index("--save") + 2 :])
shutil.copyfile(os.environ["STAND_IN_REPORT"], save)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    """One `tltrace run --sanitize --sass` of the sm_90a lowering under the stand-in: (home, process, its log)."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc (CI has one)")
    from ._cli import cli_proc

    home = tmp_path_factory.mktemp("sanitize")
    (home / "bin").mkdir()
    tool = home / "bin" / "compute-sanitizer"
    tool.write_text(f"#!{sys.executable}\n{STAND_IN}")
    tool.chmod(0o755)
    (home / "report.xml").write_bytes(gzip.decompress((DATA / "oob_memcheck.xml.gz").read_bytes()))
    (home / "oob_lowered.py").write_text(OOB_LOWERED)
    env = cli_env(
        PATH=f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        STAND_IN_LOG=str(home / "log.json"),
        STAND_IN_REPORT=str(home / "report.xml"),
    )
    args = ("run", "--sanitize", "--sass", "-q", "--trace-dir", "td", "oob_lowered.py")
    p = cli_proc(*args, cwd=home, env=env, rc=0)
    return home, p, json.loads((home / "log.json").read_text())


def test_the_error_is_named_at_the_store_and_the_sass_puts_a_store_at_its_pc(sanitized) -> None:
    from ._cli import cli_proc

    home, p, _ = sanitized
    line = store_line(home / "oob_lowered.py")
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("memcheck: 24 ")]
    assert said and f" at oob_lowered.py:{line} `B[bx * 128 + i] = ...`" in said[0], p.stderr
    shown = cli_proc(
        "show", "--trace-dir", "td", "oob_lowered", "-1", "--sanitizer", "--json", cwd=home, rc=0
    )
    [err] = [e for e in json.loads(shown.stdout)["errors"] if e["kernel"]]
    assert err["python"]["line"] == line and err["pc"] == "0xf0"
    assert err["sass"] == {"line": 19, "agrees": True}, err["sass"]
    # The oracle: the recorded SASS, read from the pack, holds a global store at compute-sanitizer's pc.
    run = run_dirs(home / "td" / "oob_lowered")[-1]
    m = json.loads((run / "manifest.json").read_text())
    [sass] = [r for r in m["records"] if r.get("role") == "sass"]
    insn = [ln for ln in pack_texts(run)[sass["after_hash"]].split("\n") if "/*00f0*/" in ln]
    assert len(insn) == 1 and re.search(r"\bSTG\b", insn[0]), insn
    print(said[0], "|", insn[0].strip())


def test_the_child_is_the_same_run_without_sanitize_and_with_the_cache_off(sanitized) -> None:
    home, _, log = sanitized
    argv = log["argv"]
    assert argv[:4] == ["--tool", "memcheck", "--xml", "--save"]
    assert Path(argv[4]).parent == home / "td" / "oob_lowered"
    assert argv[5:8] == [sys.executable, "-m", "tltrace"]
    assert argv[8:] == ["run", "--sass", "-q", "--trace-dir", "td", "oob_lowered.py"]
    assert log["caching"] == "1"
    run = run_dirs(home / "td" / "oob_lowered")[-1]
    assert (run / "sanitizer.xml").is_file() and not list((home / "td" / "oob_lowered").glob(".sanitizer*"))


@pytest.mark.gpu
def test_on_a_gpu_memcheck_names_the_out_of_bounds_store(need_gpu, tmp_path: Path) -> None:
    from ._cli import cli_proc

    if (
        shutil.which("compute-sanitizer") is None
        and not Path("/usr/local/cuda/bin/compute-sanitizer").exists()
    ):
        pytest.skip("no compute-sanitizer")
    shutil.copy(DATA / "oob.py", tmp_path / "oob.py")
    p = cli_proc("run", "--sanitize", "-q", "--trace-dir", "td", "oob.py", cwd=tmp_path)
    line = store_line(tmp_path / "oob.py")
    shown = cli_proc("show", "--trace-dir", "td", "oob", "-1", "--sanitizer", "--json", cwd=tmp_path, rc=0)
    errors = json.loads(shown.stdout)["errors"]
    stores = [e for e in errors if e["direction"] == "write" and e["kernel"]]
    print(f"exit {p.returncode}; {len(errors)} groups; expected oob.py:{line}")
    for ln in p.stderr.splitlines():
        if ln.startswith("memcheck:"):
            print(ln)
    assert stores and stores[0]["python"]["line"] == line, (errors, p.stderr[-3000:])
    assert stores[0]["count"] > 0 and re.search(r"B\[.*\]\s*=", stores[0]["cuda"])


def test_without_a_cuda_line_the_sass_stage_gives_it(sanitized, tmp_path: Path) -> None:
    from tltrace.runtime import outer, sanitize

    home, _, _ = sanitized
    script_dir = shutil.copytree(home / "td" / "oob_lowered", tmp_path / "oob_lowered")
    report = (home / "report.xml").read_text()
    save = script_dir / "report.xml"
    save.write_text(re.sub(r"\s*<line>19</line>", "", report))  # as from a build without -lineinfo
    out = sanitize.finish("memcheck", save, script_dir, outer.found(script_dir, set(), 0))
    [mem] = [n for n in out.named if n.group.first.func]
    assert mem.group.first.line is None
    assert mem.python is not None and mem.python["line"] == store_line(home / "oob_lowered.py")
    assert mem.note is not None and "kernel.cu:19 from the SASS stage at pc 0xf0" in mem.note
