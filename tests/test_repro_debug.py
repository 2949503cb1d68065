"""Repro directories of two compiles of one kernel do not share a name; repro.py runs in one process, for pdb (#54)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tltrace.history.runs import load_manifest, run_dirs
from tltrace.rerun.make import default_dir

from ._records import copy_tree

FAILING = """
import tilelang
import tilelang.language as T


def make_bad():
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            frag = T.alloc_fragment((64,), "float32")  # the CPU backend cannot lay a fragment out
            T.copy(A, frag)
            T.copy(frag, B)

    return bad


tilelang.compile(make_bad(), target="c", execution_backend="cython")
"""


def test_two_compiles_of_one_kernel_get_two_default_names(recorded: Path, tmp_path: Path) -> None:
    runs = [load_manifest(d) for d in run_dirs(copy_tree(recorded, tmp_path / "t") / "elementwise_add")]
    assert len({m.kernel for m in runs}) == 1 and len(runs) > 1  # one kernel, several compiles
    rec = runs[0].records[3]
    names = [default_dir(m, rec) for m in runs]
    assert len(set(names)) == len(runs), names
    for m, name in zip(runs, names):
        assert name.startswith(f"repro-{m.kernel}-") and name.endswith(f"-{rec.index:02d}-{rec.name}")
        assert m.run_id.endswith("_" + name.split("-")[2])  # the run id's last part, as `show` lists it
    assert default_dir(replace(runs[0], run_id="run_20240101_120000"), rec) != default_dir(
        replace(runs[1], run_id="run_20240101_120001"), rec
    )  # old ids without a unique part: a hash of the id


@pytest.fixture(scope="module")
def two_repros(tmp_path_factory) -> tuple[Path, list[Path]]:
    """The failing script traced twice (two compiles of kernel `bad`), and `tltrace repro` of each."""
    tmp = tmp_path_factory.mktemp("repro_debug")
    (tmp / "bad.py").write_text(FAILING)
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "tr", "bad.py"],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode != 0 and "LayoutInference" in r.stdout + r.stderr
    made = []
    for which in ("-1", "-2"):  # the failed pass of each (no --pass), into the default directory
        r = subprocess.run(
            [sys.executable, "-m", "tltrace", "repro", "--trace-dir", "tr", "bad", which],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "--in-process" in r.stdout  # the again: line says how to debug it
        made.append(next(Path(w.rstrip("/")) for w in r.stdout.split() if "/repro-bad-" in w))
    return tmp, made


def test_repros_of_two_compiles_of_one_kernel_both_stay(two_repros) -> None:
    tmp, made = two_repros
    dirs = sorted(p.name for p in tmp.glob("repro-*"))
    assert len(dirs) == 2 and {p.name for p in made} == set(dirs)  # the second did not overwrite the first
    # Each names its own compile: the last part of each run id (the directories under .run_records).
    uids = sorted(d.name.rsplit("_", 1)[1] for d in run_dirs(tmp / "tr" / "bad"))
    assert sorted(d.split("-")[2] for d in dirs) == uids
    assert all(json.loads((tmp / d / "repro.json").read_text())["kernel"] == "bad" for d in dirs)


# Prints each process repro.py starts (the audit event CPython raises for every subprocess), then runs it.
AUDITED = """
import runpy, sys
sys.addaudithook(lambda e, a: e == "subprocess.Popen" and print("POPEN", list(a[1]), file=sys.stderr))
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _audited(repro: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", AUDITED, str(repro / "repro.py"), *args],
        cwd=repro,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_in_process_reruns_the_pass_without_a_child(two_repros) -> None:
    _, made = two_repros
    child = _audited(made[0])
    assert child.returncode == 0 and "reproduced" in child.stdout, child.stdout + child.stderr
    assert any(
        "POPEN" in ln and "--child" in ln for ln in child.stderr.splitlines()
    )  # the oracle sees children
    here = _audited(made[0], "--in-process")
    assert here.returncode == 0 and here.stdout.splitlines()[-1] == "reproduced", here.stdout + here.stderr
    assert not any("--child" in ln for ln in here.stderr.splitlines() if ln.startswith("POPEN")), here.stderr


def test_pdb_opens_a_post_mortem_where_the_pass_raises(two_repros) -> None:
    _, made = two_repros
    r = subprocess.run(
        [sys.executable, str(made[1] / "repro.py"), "--pdb"],
        cwd=made[1],
        input="p 6 * 7\nc\n",  # pdb reads its commands from stdin: evaluate one, then go on
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "(Pdb) 42" in out  # a debugger prompt answered in the process that ran the pass
    assert out.index("(Pdb) 42") < out.index("reproduced")
    assert "can not be inferred" in r.stderr + out  # the pass's own error, printed before the prompt
