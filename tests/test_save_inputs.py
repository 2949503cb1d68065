"""`run --launches --save-inputs[=N]` and `replay SCRIPT --launch I --build --run` (docs/launches.md).

The oracle: the script's own tensors, written by the script itself with numpy before and after
each launch, and hashlib's sha256 of the files; replay's verdict against a saved output edited
by the test. CPU: `target="c"`, cython, real TileLang.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy
import pytest

from tltrace.format import launches as log_format

from ._cli import cli_proc
from ._kernels import DYNAMIC_SCALE

# The dynamic-size kernel of tests/_kernels.py (DYNAMIC_SCALE), launched at two sizes on random
# inputs; the script saves what it gave and what it got (the oracle).
SCRIPT = (
    DYNAMIC_SCALE[: DYNAMIC_SCALE.index("if __name__")]
    + """import numpy


if __name__ == "__main__":
    cuda = sys.argv[2:] == ["cuda"]
    where = {"target": "cuda", "execution_backend": "tvm_ffi"} if cuda else {"target": "c", "execution_backend": "cython"}
    kernel = tilelang.compile(make_scale(), **where)
    torch.manual_seed(0)
    for k, size in enumerate((64, 200)):
        a = torch.randn(size, dtype=torch.float32).to("cuda" if cuda else "cpu")
        b = torch.full((size,), 7.0, device=a.device)
        numpy.save(f"{sys.argv[1]}/b-before{k + 1}.npy", b.cpu().numpy())
        kernel(a, b)
        numpy.save(f"{sys.argv[1]}/a{k + 1}.npy", a.cpu().numpy())
        numpy.save(f"{sys.argv[1]}/b-after{k + 1}.npy", b.cpu().numpy())
"""
)


def _run(d: Path, *device: str, **env: str) -> Path:
    """The script run under `run --launches --save-inputs=2` in `d`; return its inputs directory."""
    (d / "save.py").write_text(SCRIPT)
    (d / "oracle").mkdir()
    cli_proc(
        "run",
        "-q",
        "--launches",
        "--save-inputs=2",
        "--trace-dir",
        d / "td",
        "save.py",
        "oracle",
        *device,
        cwd=d,
        rc=0,
        **env,
    )
    (root,) = (d / "td" / "save" / ".run_records").glob(f"{log_format.INPUTS}.*")
    return root


def _index(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / log_format.INPUTS_INDEX).read_text().splitlines()]


def _replay(d: Path, *extra: object, rc: int, td: Path | None = None):
    return cli_proc("replay", "save.py", "--trace-dir", td or d / "td", *extra, cwd=d, rc=rc)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("save")
    _run(d)
    return d


def _copy(saved: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the trace dir to damage (the script stays where it ran): (the copy, its inputs directory)."""
    td = tmp_path / "td"
    shutil.copytree(saved / "td", td)
    (root,) = (td / "save" / ".run_records").glob(f"{log_format.INPUTS}.*")
    return td, root


def test_saved_arrays_are_the_scripts_own(saved) -> None:
    (root,) = (saved / "td" / "save" / ".run_records").glob(f"{log_format.INPUTS}.*")
    _check_saved(saved, root)


@pytest.mark.gpu
def test_save_and_replay_on_the_gpu(need_gpu, tmp_path) -> None:
    """The same on CUDA (tvm_ffi; the GPU machine's Python 3.12: sys.monitoring's PY_START and
    PY_RETURN): the saved arrays are the script's own, replay of launch 2 on the GPU is the same;
    prints what it checked."""
    root = _run(tmp_path, "cuda")
    _check_saved(tmp_path, root)
    p = _replay(tmp_path, "--launch", "2", "--build", "--run", rc=0)
    assert "argument 1 (B): same" in p.stdout, p.stdout
    print(f"gpu: {len(_index(root))} launches saved, each against the script's arrays; replay:")
    print(p.stdout)


def _check_saved(d: Path, root: Path) -> None:
    """Launches 1 and 2 saved: each file's sha256 the index's, A before and B before and after the script's."""
    saved = d
    index = _index(root)
    assert [e["launch"] for e in index] == [1, 2]
    for k, e in enumerate(index, 1):
        a, b = e["args"]
        assert (a["index"], b["index"]) == (0, 1)
        for item in (a, b):
            for when in ("before", "after"):
                assert hashlib.sha256((root / item[when]).read_bytes()).hexdigest() == item[f"{when}_sha256"]
        oracle = saved / "oracle"
        assert numpy.array_equal(numpy.load(root / a["before"]), numpy.load(oracle / f"a{k}.npy"))
        assert numpy.array_equal(numpy.load(root / b["before"]), numpy.load(oracle / f"b-before{k}.npy"))
        assert numpy.array_equal(numpy.load(root / b["after"]), numpy.load(oracle / f"b-after{k}.npy"))
        assert b["shape"] == list(numpy.load(oracle / f"a{k}.npy").shape) and b["dtype"] == "float32"


def test_replay_reproduces_launch_2(saved) -> None:
    p = _replay(saved, "--launch", "2", "--build", "--run", rc=0)
    assert "argument 1 (B): same" in p.stdout and "launch 2: same" in p.stdout, p.stdout
    assert "inputs saved (run --save-inputs) for launch 1, 2:" in _show(saved)


def _show(d: Path) -> str:
    return cli_proc("show", "--trace-dir", d / "td", "save", "-1", "--launches", cwd=d, rc=0).stdout


def _tamper(root: Path, edit, when: str = "after") -> None:  # noqa: ANN001
    """Edit launch 2's saved B (after the launch) with `edit(array)`, keeping the index's hash true."""
    index = _index(root)
    item = index[1]["args"][1]
    array = edit(numpy.load(root / item[when]))
    (root / item[when]).unlink()
    numpy.save(root / item[when], array)
    item[f"{when}_sha256"] = hashlib.sha256((root / item[when]).read_bytes()).hexdigest()
    (root / log_format.INPUTS_INDEX).write_text("".join(json.dumps(e) + "\n" for e in index))


def test_a_tampered_output_exits_1_naming_the_argument(saved, tmp_path) -> None:
    td, root = _copy(saved, tmp_path)
    _tamper(root, lambda a: numpy.where(numpy.arange(a.size) == 5, a + 0.5, a).astype(a.dtype))
    p = _replay(saved, "--launch", "2", "--build", "--run", rc=1, td=td)
    assert "argument 1 (B): DIFFERS (1 of 200 elements differ, max abs error 0.5)" in p.stdout, p.stdout
    assert "argument 0 (A): same" in p.stdout


def test_a_saved_array_of_another_shape_is_refused(saved, tmp_path) -> None:
    """B saved shorter than the launch log says: refused before the call (the kernel, its size bound
    from A, would write past B's end), one line, exit 3."""
    td, root = _copy(saved, tmp_path)
    _tamper(root, lambda a: a[:10], when="before")
    p = _replay(saved, "--launch", "2", "--build", "--run", rc=3, td=td)
    assert "argument 1 (B): the saved array (float32[10]) is not what the launch was given" in p.stderr, (
        p.stderr
    )
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_a_damaged_npy_is_one_line(saved, tmp_path) -> None:
    td, root = _copy(saved, tmp_path)
    path = root / _index(root)[1]["args"][0]["before"]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    p = _replay(saved, "--launch", "2", "--build", "--run", rc=3, td=td)
    assert len(p.stderr.strip().splitlines()) == 1 and "is damaged" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_launch_needs_build_and_run(saved) -> None:
    p = _replay(saved, "--launch", "2", "--build", rc=2)
    assert "--build --run" in p.stderr
    p = _replay(saved, "--launch", "9", "--build", "--run", rc=2)
    assert "no launch 9 here: the launches shown are numbered 1 to 2" in p.stderr
    p = cli_proc("run", "--save-inputs=abc", "save.py", "oracle", cwd=saved, rc=2)
    assert p.stderr.strip() == "tltrace: error: --save-inputs='abc' is not a number of launches (0 or more)"


def test_a_launch_over_the_byte_cap_is_counted_not_saved(tmp_path) -> None:
    # Launch 1 (64 floats, A and B, before and after) holds 1024 bytes; launch 2 (200) holds 3200.
    d = tmp_path
    root = _run(d, TLTRACE_SAVE_INPUTS_MAX="2000")
    first, second = _index(root)
    assert "args" in first and "skipped" in second and "over the byte cap (3200 bytes" in second["skipped"]
    assert sorted(p.name for p in root.glob("*.npy")) == sorted(
        first["args"][i][w] for i in (0, 1) for w in ("before", "after")
    )
    p = _replay(d, "--launch", "2", "--build", "--run", rc=3)
    assert "launch 2's inputs were not saved: over the byte cap" in p.stderr
    assert "inputs saved (run --save-inputs) for launch 1:" in _show(d)


def test_clean_removes_the_saved_inputs(saved, tmp_path) -> None:
    td, root = _copy(saved, tmp_path)
    size = sum(p.stat().st_size for p in root.iterdir())
    p = cli_proc("clean", "--trace-dir", td, "--all", "--json", cwd=saved, rc=0)
    assert not root.exists() and not list(root.parent.glob(f"{log_format.INPUTS}.*"))
    assert json.loads(p.stdout)["bytes_freed"] >= size, p.stdout
