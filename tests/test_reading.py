"""tltrace.load(): a trace dir, a script dir or a run dir, read from Python; notebooks' inline views.

Real CPU compiles of elementwise_add; the 24-compile invocation is that compile cloned
under 24 run ids of one invocation (the reader does not care how they were made).
The notebook parts run IPython's own display machinery (DisplayFormatter, run_cell).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import tltrace
from tltrace.errors import RecordsError

from ._kernels import KERNELS
from ._records import read_manifest, recorded_fixture, run_dirs

traced = recorded_fixture(
    "The first recorded compile of elementwise_add.",
    elementwise_add=slice(0, 1),
)


@pytest.fixture(scope="module")
def many(traced: Path, tmp_path_factory) -> Path:
    """Script 'tuned': one invocation of 24 compiles (clones of the real one, distinct signatures)."""
    td = tmp_path_factory.mktemp("many") / "traces"
    src = run_dirs(traced / "elementwise_add")[-1]
    rec = td / "tuned" / ".run_records"
    rec.mkdir(parents=True)
    shutil.copytree(traced / "elementwise_add" / ".run_records" / ".objects", rec / ".objects")
    for n in range(24):
        dest = rec / f"run_20260101_000000_{n:06d}_1_{n:08x}"
        shutil.copytree(src, dest)
        data = read_manifest(dest)
        data.update(run_id=dest.name, invocation="inv-24", signature=f"add {64 * (n + 1)} f32 #{n:06x}")
        (dest / "manifest.json").write_text(json.dumps(data))
    return td


def test_load_a_trace_dir_a_script_dir_and_a_run_dir(traced: Path) -> None:
    run = run_dirs(traced / "elementwise_add")[-1]
    m = read_manifest(run)
    for path in (traced, traced / "elementwise_add", run):
        t = tltrace.load(path)
        (inv,) = t.invocations
        (c,) = inv.compiles
        assert c.run_id == run.name and c.kernel == m["kernel"] and c.signature == m["signature"]
        assert [p.name for p in c.passes] == [r["name"] for r in m["records"]]
        assert [p.status for p in c.passes] == [r["status"] for r in m["records"]]
        assert [p.phase for p in c.passes] == [r["phase"] for r in m["records"]]
    changed = next(i for i, r in enumerate(m["records"]) if r["status"] == "changed")
    p = c.passes[changed]
    assert p.before == (run / m["records"][changed]["before_file"]).read_text()
    assert p.after == (run / m["records"][changed]["after_file"]).read_text()
    assert p.rows and {r["kind"] for r in p.rows} - {"same"}  # the diff rows of a changed pass
    assert p.unified()[0].startswith("--- ")
    assert c.pass_(p.name.lower()).index == p.index  # the --pass grammar, any case
    assert c.pass_(str(p.index)) is p
    with pytest.raises(KeyError):
        c.pass_("NoSuchPass")
    assert c.summary.passes == len(m["records"]) and c.summary.label == m["signature"]


def test_load_refuses_what_holds_no_records(tmp_path: Path) -> None:
    with pytest.raises(RecordsError):
        tltrace.load(tmp_path)
    with pytest.raises(RecordsError):
        tltrace.load(tmp_path / "missing")


def _api_example() -> str:
    text = (Path(__file__).parent.parent / "docs" / "api.md").read_text()
    section = text.split("## `tltrace.load(path)`", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_documented_example_on_24_compiles(many: Path, capsys) -> None:
    inv = tltrace.load(many).invocations[-1]
    assert len(inv.compiles) == 24 and inv.id == "inv-24"
    assert inv.compile("add 128 ").signature.startswith("add 128 ")
    exec(compile(_api_example(), "docs/api.md", "exec"), {"trace_dir": many})
    out = capsys.readouterr().out
    name = re.match(r"(\S+) grew the IR most: \+(\d+) lines, over 24 compiles", out)
    assert name, out
    # The same answer computed here from the manifests' own texts.
    best = max(
        (len(p.after.splitlines()) - len(p.before.splitlines()), p.name)
        for p in inv.compiles[0].passes
        if p.status == "changed"
    )
    assert int(name.group(2)) == best[0]


def test_a_compile_and_an_invocation_render_in_ipython(traced: Path, many: Path) -> None:
    from IPython.core.formatters import DisplayFormatter

    fmt = DisplayFormatter()
    c = tltrace.load(traced).invocations[-1].compiles[0]
    data, _ = fmt.format(c)
    html = data["text/html"]
    assert html.startswith("<iframe") and 'sandbox="allow-scripts"' in html and "srcdoc=" in html
    assert "allow-same-origin" not in html
    page = (c.path / "report.html").read_text()
    assert "&lt;script" in html and len(html) > len(page)  # the whole report, escaped into srcdoc
    inv = tltrace.load(many).invocations[-1]
    data, _ = fmt.format(inv)
    assert data["text/html"].count("<tr>") == 25 and "<iframe" in data["text/html"]


@pytest.mark.browser
def test_the_inline_report_runs_in_chromium(open_page, traced: Path, tmp_path: Path) -> None:
    """The iframe as a notebook shows it: the report inside runs (sandboxed, no same origin)."""
    c = tltrace.load(traced).invocations[-1].compiles[0]
    host = tmp_path / "notebook.html"
    host.write_text(f"<!DOCTYPE html><html data-ready='1'><body>{c._repr_html_()}</body></html>")
    page = open_page(host)
    frame = page.frames[1]
    frame.wait_for_selector("html[data-ready='1']")
    assert frame.locator("li.tl-pass").count() == len(c.passes)
    assert frame.locator(".tl-nav").count() == 0  # no links to files that are not beside it


def test_cell_magic_traces_the_cell_and_shows_it(tmp_path: Path, monkeypatch) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "tltrace")
        assert shell.run_cell(KERNELS).success
        td = tmp_path / "nb"
        with capture_output() as shown:  # IPython's display publisher, as a notebook gets it
            res = shell.run_cell(f"%%tltrace --trace-dir {td}\nk = build(256)\n")
        assert res.success, res.error_in_exec
        inv = shell.user_ns["_tltrace"]
        assert len(inv.compiles) == 1 and inv.compiles[0].kernel == "add"
        assert inv.compiles[0].status == "complete"
        (out,) = shown.outputs
        assert "<iframe" in out.data["text/html"] and out.data["text/html"] == inv._repr_html_()
        assert tltrace.enabled() is None  # the span ended with the cell
        assert not list(td.rglob("codegen_*.cpp"))  # no working files
        with capture_output() as bad:
            shell.run_cell("%%tltrace --mode nope\nx = 1\n")
        assert "usage: %%tltrace" in bad.stdout and not bad.outputs
    finally:
        tltrace.disable()
        InteractiveShell.clear_instance()


def test_cell_magic_refuses_a_trace_dir_it_could_not_record_into_before_running_the_cell(
    tmp_path: Path, monkeypatch
) -> None:
    """A trace dir that is a file, and a script dir that is a symbolic link (the store never writes
    through one): one line, and the cell does not run (it compiled and ran, and then ended on
    "the cell compiled no kernel")."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from tltrace.config import build_settings, script_name_from_argv

    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    td = tmp_path / "nb"
    script_dir = build_settings(mode="html", trace_dir=td, script_name=script_name_from_argv()).script_dir
    td.mkdir()
    script_dir.symlink_to(elsewhere, target_is_directory=True)
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "tltrace")
        for where, says in (
            (tmp_path / "afile", "(it is a file, not a directory)"),
            (td, "is a symbolic link"),
        ):
            with capture_output() as out:
                shell.run_cell(f"%%tltrace --trace-dir {where}\nran = True\n")
            lines = out.stdout.splitlines()
            assert len(lines) == 1 and lines[0].startswith("tltrace: error: cannot write to trace dir"), (
                out.stdout
            )
            assert says in lines[0] and "compiled no kernel" not in out.stdout
            assert "ran" not in shell.user_ns and tltrace.enabled() is None
        assert (tmp_path / "afile").read_text() == "mine" and list(elsewhere.iterdir()) == []
    finally:
        tltrace.disable()
        InteractiveShell.clear_instance()


def test_manifest_on_disk_has_every_field_of_every_record(traced: Path) -> None:
    """Schema 4: json.load and jq read what is on disk, no field left for a reader to restore."""
    from tltrace.format.records import PassRecord

    run = run_dirs(traced / "elementwise_add")[-1]
    data = json.loads((run / "manifest.json").read_text())
    assert data["schema_version"] == 4
    fields = set(PassRecord.__dataclass_fields__)
    for i, r in enumerate(data["records"]):
        assert set(r) == fields
        assert r["index"] == i and r["phase"] and r["status"] and r["before_hash"]
        assert r["after_hash"] or r["status"] == "failed"


def test_a_jupyter_kernel_traces_under_the_notebook_name(monkeypatch) -> None:
    from tltrace.format.names import script_name_from_argv

    launcher = "/venv/lib/python3.11/site-packages/ipykernel_launcher.py"
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/work/GEMM tuning.ipynb")
    assert script_name_from_argv(launcher) == "GEMM_tuning"
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert script_name_from_argv(launcher) == "notebook"
