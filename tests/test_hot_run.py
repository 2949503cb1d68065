"""`tltrace run --ncu` where ncu cannot measure: one line, and the script runs once, untouched.

No GPU here: no ncu on PATH, or an `ncu` that says what ncu says without permission for the
counters (ERR_NVGPUCTRPERM, in its --log-file) and runs the command it was given. The script
compiles nothing; what is checked is its output (once), its exit status, the one line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

SCRIPT = """import os, sys
print("script ran; under:", os.environ.get("TLTRACE_UNDER"))
sys.exit(3)
"""

# What ncu prints into --log-file when the counters are for admins only, then the command runs.
FAKE_NCU = """#!/bin/sh
echo called >> "$(dirname "$0")/../ncu-calls"
log=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--log-file" ]; then log="$2"; shift 2; break; fi
  shift
done
echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0." >> "$log"
exec "$@"
"""


def _script(tmp_path: Path) -> Path:
    p = tmp_path / "noop.py"
    p.write_text(SCRIPT)
    return p


def _path_without_ncu(*first: Path) -> str:
    return os.pathsep.join([*map(str, first), os.path.dirname(sys.executable), "/usr/bin", "/bin"])


def _one_line(stderr: str, words: str) -> None:
    ours = [ln for ln in stderr.splitlines() if ln.startswith("tltrace:") and "--ncu" in ln]
    assert len(ours) == 1 and words in ours[0], stderr


def test_no_ncu_runs_the_script_once(cli_proc, tmp_path: Path) -> None:
    script = _script(tmp_path)
    p = cli_proc("run", "--quiet", "--trace-dir", tmp_path / "td", "--ncu", script, PATH=_path_without_ncu())
    assert p.returncode == 3, p.stderr
    assert p.stdout.count("script ran") == 1 and "under: None" in p.stdout
    _one_line(p.stderr, "no ncu")


@pytest.mark.parametrize("timeout", [[], ["--timeout", "120"]], ids=["plain", "timeout"])
def test_no_permission_for_the_counters(cli_proc, tmp_path: Path, timeout: list[str]) -> None:
    """With --timeout too, the supervised child of the run under ncu does not start ncu again."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU)
    ncu.chmod(0o755)
    script = _script(tmp_path)
    td = tmp_path / "td"
    p = cli_proc(
        "run",
        "--quiet",
        "--trace-dir",
        td,
        *timeout,
        "--ncu=SourceCounters",
        script,
        PATH=_path_without_ncu(bin_dir),
    )
    assert p.returncode == 3, p.stderr
    # once, as the inner `tltrace run` under the tool; the variable that told it so is not the script's
    assert p.stdout.count("script ran") == 1 and "under: None" in p.stdout
    _one_line(p.stderr, "ERR_NVGPUCTRPERM")
    assert (tmp_path / "ncu-calls").read_text().count("\n") == 1  # ncu started once
    left = [f.name for f in td.rglob(".ncu-*")]
    assert left == [], left  # the log and the report's place are cleaned up


# An `ncu` that writes a report file, runs the command, and answers `--import` with the CSV ncu
# printed for the H100 report (tests/data/ncu): no ncu_report module beside it, so the CSV is read.
REPLAY_NCU = """#!/bin/sh
if [ "$1" = "--import" ]; then gzip -dc "$(dirname "$0")/lines.csv.gz"; exit 0; fi
out=""; log=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2;;
    --log-file) log="$2"; shift 2; break;;
    *) shift;;
  esac
done
echo "==PROF== Report: $out.ncu-rep" >> "$log"
printf 'report' > "$out.ncu-rep"
exec "$@"
"""

# The "kernel run": the recorded compile (run --sass on the H100) put where this run's compiles go.
COPY_RUN = """import pathlib, shutil, sys
src, records = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
shutil.copytree(src, records / src.name)
sys.exit(5)
"""


def test_run_ncu_keeps_the_profile_and_prints_the_hot_lines(cli_proc, tmp_path: Path) -> None:
    """The whole path after the tool: the report read (the CSV fallback), the kernel matched to the
    compile that defines it, ncu.json and the report kept beside it, the table on stderr, the status."""
    import shutil
    import tarfile

    data = Path(__file__).resolve().parent / "data" / "ncu"
    with tarfile.open(data / "fa_plain_trace.tgz") as t:
        t.extractall(tmp_path / "rec", filter="data")
    src = next((tmp_path / "rec").glob("*/*/.run_records/run_*"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(REPLAY_NCU)
    (bin_dir / "ncu").chmod(0o755)
    shutil.copy(data / "fa_plain_lines.csv.gz", bin_dir / "lines.csv.gz")
    script = tmp_path / "fake_fa.py"
    script.write_text(COPY_RUN)
    td = tmp_path / "td"
    records = td / "fake_fa" / ".run_records"
    p = cli_proc(
        "run", "--quiet", "--trace-dir", td, "--ncu", script, src, records, PATH=_path_without_ncu(bin_dir)
    )
    assert p.returncode == 5, p.stderr
    kept = records / src.name
    assert (kept / "ncu.json").is_file() and (kept / "ncu.ncu-rep").read_text() == "report"
    assert "hot lines of main_kernel" in p.stderr and "example_mha_fwd_bshd.py:91" in p.stderr, p.stderr
    assert not list(td.rglob(".ncu-*"))
    shown = cli_proc("show", "--trace-dir", td, kept, "--hot", "--json", rc=0)
    (r,) = json.loads(shown.stdout)["kernels"]
    # the hottest line: the K copy (line 45), whose TMA load's span TileLang dropped (sourcemap/dropped.py)
    assert r["mode"] == "sass" and r["samples"] == 160 and r["lines"][0]["line"] == 45
    assert r["lines"][0].get("recovered"), r["lines"][0]


def test_ncu_and_sanitize_exclude_each_other(run_cli, tmp_path: Path) -> None:
    res = run_cli("run", "--ncu", "--sanitize", _script(tmp_path))
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "exclude each other" in res.stderr
    assert "script ran" not in res.stdout


def test_the_kernel_filter_takes_tilelangs_kernels_and_leaves_cpp_ones(tmp_path: Path) -> None:
    """ncu -k matches the mangled name (--kernel-name-base mangled): the names come from the C++
    compiler itself (nm over an object with an extern "C" kernel, as TileLang writes them, and a
    templated C++ kernel whose plain name also ends in `_kernel`, as torch's do)."""
    import re
    import shutil
    import subprocess

    from tltrace.runtime import ncu

    cxx, nm = shutil.which("g++") or shutil.which("c++"), shutil.which("nm")
    if cxx is None or nm is None:
        pytest.skip("no C++ compiler or nm")
    src = tmp_path / "k.cpp"
    src.write_text(
        'extern "C" void main_kernel(float* a) { a[0] = 1; }\n'
        'extern "C" void main_kernel_1(float* a) { a[0] = 2; }\n'
        "namespace at { namespace native {\n"
        "template <typename T> void distribution_elementwise_grid_stride_kernel(long n, T t) { (void)n; (void)t; }\n"
        "template void distribution_elementwise_grid_stride_kernel<float>(long, float);\n"
        "} }\n"
    )
    obj = tmp_path / "k.o"
    subprocess.run([cxx, "-c", str(src), "-o", str(obj)], check=True)
    names = subprocess.run([nm, "--defined-only", "-j", str(obj)], capture_output=True, text=True, check=True)
    symbols = [s for s in names.stdout.split() if "kernel" in s]
    cpp = [s for s in symbols if s.startswith("_Z")]
    assert cpp and {"main_kernel", "main_kernel_1"} <= set(symbols), symbols
    argv = ncu.prefix(
        ncu.Ncu("ncu", None), tmp_path / "r.ncu-rep", tmp_path / "log", "SourceCounters", 1, None
    )
    assert argv[argv.index("--kernel-name-base") + 1] == "mangled"
    pattern = argv[argv.index("-k") + 1].removeprefix("regex:")
    taken = sorted(s for s in symbols if re.search(pattern, s))
    assert taken == ["main_kernel", "main_kernel_1"], (taken, symbols)
