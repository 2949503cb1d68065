"""`%load_ext tltrace`, the `%%tltrace` cell magic and `_repr_html_` in a real Jupyter kernel.

An ipykernel process started by jupyter_client (as Jupyter starts one for a notebook),
driven over its ZeroMQ channels; what the test reads is what a notebook front end gets
on iopub: `stream` messages (the cell's text output) and `display_data` /
`execute_result` (the rich output, here the report in a sandboxed iframe). The kernel
compiles on the CPU (target c, cython) with TileLang's cache off.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

import tltrace

from ._kernels import KERNELS
from ._records import read_manifest, run_dirs

pytest.importorskip("ipykernel")
jupyter_client = pytest.importorskip("jupyter_client")

pytestmark = pytest.mark.compile

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIMEOUT = 300.0  # one cell: a kernel import of TileLang and a compile on a shared, busy CPU


class Kernel:
    """A live ipykernel and a blocking client; `run(code)` returns what iopub said about the cell."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name="python3")
        # The kernel runs this interpreter (the one with tltrace importable), not whatever
        # `python3` kernelspec happens to be installed.
        self.km.kernel_spec.argv[0] = sys.executable
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str) -> dict:
        """Run one cell; return {'status', 'stdout', 'stderr', 'displays', 'results', 'error'}."""
        msgs: list[dict] = []
        reply = self.kc.execute_interactive(code, timeout=TIMEOUT, output_hook=msgs.append, allow_stdin=False)
        out: dict = {"status": reply["content"]["status"], "stdout": "", "stderr": "", "displays": []}
        out["results"], out["error"] = [], None
        for m in msgs:
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                out[content["name"]] += ANSI.sub("", content["text"])
            elif kind == "display_data":
                out["displays"].append(content["data"])
            elif kind == "execute_result":
                out["results"].append(content["data"])
            elif kind == "error":
                out["error"] = f"{content['ename']}: {content['evalue']}"
        return out

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    work = tmp_path_factory.mktemp("notebook")
    root = str(Path(__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "TILELANG_DISABLE_CACHE": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
        "JPY_SESSION_NAME": str(work / "Kernels 1.ipynb"),  # what Jupyter Server sets for a notebook
    }
    env.pop("TL_LOWER_TRACE", None)
    k = Kernel(work, env)
    try:
        yield k, work
    finally:
        k.close()


def _ok(cell: dict) -> dict:
    assert cell["status"] == "ok", cell["error"] or cell["stderr"][-2000:]
    return cell


def test_cell_magic_in_a_real_kernel(kernel) -> None:
    k, work = kernel
    loaded = _ok(k.run("%load_ext tltrace\nimport tltrace\nprint(tltrace.__file__)"))
    assert Path(loaded["stdout"].strip()).resolve().is_relative_to(Path(tltrace.__file__).resolve().parent)
    _ok(k.run(KERNELS))

    cell = _ok(k.run("%%tltrace --trace-dir traces\nk = build(256)\n"))
    # Records on disk: one compile under the notebook's own script dir.
    script_dir = work / "traces" / "Kernels_1"
    (run,) = run_dirs(script_dir)
    m = read_manifest(run)
    assert m["kernel"] == "add" and m["status"] == "complete" and m["signature"].startswith("add 256")
    # The stream: html mode is quiet, one `done:` line naming the compile and its report.
    done = [line for line in cell["stdout"].splitlines() if "] done: " in line]
    assert len(done) == 1 and done[0].startswith("[add 256] done: ")
    assert f"{len(m['records'])} passes" in done[0]
    report = re.search(r"report: (\S+)", done[0]).group(1)
    assert (work / report).resolve() == (run / "report.html").resolve() and (run / "report.html").is_file()
    # The rich output: the compile's report inline, as _repr_html_ makes it from these records.
    (shown,) = cell["displays"]
    html = shown["text/html"]
    assert html.startswith("<iframe") and 'sandbox="allow-scripts"' in html and "srcdoc=" in html
    assert html == tltrace.load(work / "traces").invocations[-1]._repr_html_()
    assert "add 256" in shown["text/plain"]
    # `_tltrace` is the invocation, read from the same records.
    names = _ok(k.run("print([p.name for p in _tltrace.compiles[0].passes])"))
    assert eval(names["stdout"]) == [r["name"] for r in m["records"]]
    # A compile as a cell's value: execute_result with the report.
    value = _ok(k.run("_tltrace.compiles[0]"))
    (result,) = value["results"]
    assert result["text/html"].startswith("<iframe") and "srcdoc=" in result["text/html"]
    # Tracing ended with the cell.
    assert _ok(k.run("print(tltrace.enabled())"))["stdout"].strip() == "None"


def test_cell_magic_working_files_and_an_edit_in_a_real_kernel(kernel) -> None:
    k, work = kernel
    _ok(k.run("%load_ext tltrace"))
    _ok(k.run(KERNELS))
    cg = work / "kern" / "add.cpp"
    cell = _ok(k.run(f"%%tltrace --trace-dir wf --codegen-output {cg}\nk = build(128)\n"))
    assert cg.is_file() and "add_kernel" in cg.read_text()
    out = cell["stdout"]
    assert str(cg) in out and "working files" in out  # the stream names the working file
    assert any(line.startswith("[add 128] done: ") for line in out.splitlines())
    # Edit the working file and run the cell again: the edit is compiled in, and said so.
    text = cg.read_text()
    edited = text.replace("add_kernel(", "add_kernel(/* edited in a notebook */ ", 1)
    assert edited != text
    cg.write_text(edited)
    again = _ok(k.run(f"%%tltrace --trace-dir wf --codegen-output {cg}\nk = build(128)\n"))
    assert "PATCHED" in again["stdout"], again["stdout"][-3000:]
    assert "/* edited in a notebook */" in cg.read_text()
    runs = run_dirs(work / "wf" / "Kernels_1")
    assert len(runs) == 2 and read_manifest(runs[-1])["status"] == "complete"
    (shown,) = again["displays"]
    assert shown["text/html"].startswith("<iframe")


def test_bad_magic_arguments_say_so_in_the_kernel(kernel) -> None:
    k, _ = kernel
    _ok(k.run("%load_ext tltrace"))
    bad = _ok(k.run("%%tltrace --mode nope\nx = 1\n"))
    assert "usage: %%tltrace" in bad["stdout"] and not bad["displays"]
    nothing = _ok(k.run("%%tltrace --trace-dir none\ny = 2\n"))
    assert "compiled no kernel" in nothing["stdout"] and not nothing["displays"]
    assert _ok(k.run("print(y)"))["stdout"].strip() == "2"  # the cell ran all the same
