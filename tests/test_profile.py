"""Profiles (show --profile, --format markdown) and Chrome traces (export, run --chrome-trace).

One real invocation (three CPU compiles in a pool of two threads) is traced once
per module; the unit tests use hand-made manifests for the edge cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tltrace.format.records import PassRecord, RunManifest
from tltrace.history.profile import BACKEND, BACKEND_NAME, UNTIMED, profile, timeline
from tltrace.render.chrome_trace import chrome_trace

from ._cli import script_traced
from ._kernels import THREADED_SCRIPT


# -- a real threaded invocation ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def threaded(tmp_path_factory):
    """Trace THREADED_SCRIPT once with `tltrace run --chrome-trace`; return (trace_dir, trace json, manifests)."""
    from tltrace.history import runs

    tmp = tmp_path_factory.mktemp("threaded")
    td, out = tmp / "td", tmp / "trace.json"
    script_traced(tmp, "pool.py", THREADED_SCRIPT, "--mode", "html", "--chrome-trace", out, trace_dir=td)
    manifests = [r.manifest for r in runs.list_runs(runs.locate("pool", td), size=False)]
    assert len(manifests) == 3 and all(m is not None for m in manifests)
    return td, json.loads(out.read_text()), manifests


def _cli(*args: str):
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_profile_json_totals_add_up_to_the_recorded_durations(threaded):
    td, _, manifests = threaded
    res = _cli("show", "--trace-dir", str(td), "pool", "--profile", "--json", "--top", "1000")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["compiles"] == 3 and sorted(data["runs"]) == sorted(m.run_id for m in manifests)
    rows = data["rows"]
    assert data["rows_total"] == len(rows)
    recorded = sum(r.duration_s for m in manifests for r in m.records)
    summed = sum(r["total_s"] for r in rows if r["kind"] in ("pass", "codegen"))
    assert summed == pytest.approx(recorded, abs=1e-4)
    assert data["recorded_s"] == pytest.approx(recorded, abs=1e-5)
    # Every pass name of the records has its row, with its count over the three compiles.
    names: dict[str, int] = {}
    for m in manifests:
        for r in m.records:
            names[r.name] = names.get(r.name, 0) + 1
    by_name = {r["name"]: r for r in rows if r["kind"] in ("pass", "codegen")}
    assert {n: by_name[n]["count"] for n in names} == names
    # The top-level rows (passes, codegen, backend build, untimed) cover the compile time exactly.
    wall = sum(m.finished - m.started for m in manifests)
    assert data["compile_s"] == pytest.approx(wall, abs=1e-3)
    top_level = sum(r["top_level_s"] for r in rows)
    assert top_level == pytest.approx(wall, abs=1e-3)
    # The backend build after codegen (cython compiles the source there) is its own row, once per compile.
    backend = [r for r in rows if r["kind"] == "backend"]
    assert len(backend) == 1 and backend[0]["count"] == 3 and backend[0]["name"] == BACKEND_NAME
    assert sum(r["top_level_s"] for r in rows) / data["compile_s"] == pytest.approx(1.0, abs=1e-3)
    # Sorted slowest first, with a spread per compile for an invocation.
    totals = [r["total_s"] for r in rows]
    assert totals == sorted(totals, reverse=True)
    assert set(rows[0]["spread_s"]) == {"min", "q1", "median", "q3", "max"}


def test_profile_of_one_compile_and_top(threaded):
    td, _, manifests = threaded
    newest = max(manifests, key=lambda m: m.run_id)
    res = _cli("show", "--trace-dir", str(td), "pool", newest.run_id, "--profile", "--json", "--top", "3")
    data = json.loads(res.stdout)
    assert data["runs"] == [newest.run_id] and len(data["rows"]) == 3  # a run id: that compile alone
    assert data["rows_total"] > 3
    res = _cli("show", "--trace-dir", str(td), "pool", "-1", "--profile", "--top", "4")  # -1: the invocation
    assert res.exit_code == 0
    assert "3 compiles in 1 invocation" in res.stdout
    assert BACKEND_NAME in res.stdout and "more row(s)" in res.stdout


def test_markdown_summary_lists_the_compiles_and_top_passes(threaded):
    td, _, manifests = threaded
    res = _cli("show", "--trace-dir", str(td), "--format", "markdown", "--top", "5")
    assert res.exit_code == 0, res.output
    md = res.stdout
    assert md.startswith("## tltrace: pool")
    for m in manifests:
        assert f"`{m.run_id}`" in md
    assert "### Slowest passes (top 5 of" in md
    table = [line for line in md.splitlines() if line.startswith("| ✅")]
    assert len(table) == 3


def test_chrome_trace_of_a_threaded_invocation(threaded):
    _, trace, manifests = threaded
    _validate_trace_event_format(trace)
    events = trace["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    # One process: the invocation.
    assert {e["pid"] for e in events} == {1}
    assert len({m.invocation for m in manifests}) == 1
    procs = [e for e in meta if e["name"] == "process_name"]
    assert len(procs) == 1 and manifests[0].invocation in procs[0]["args"]["name"]
    # One track per compiling thread, named after it; each compile on its thread's track.
    names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    threads = {(m.thread_id, m.thread) for m in manifests}
    assert len(threads) == len(names) == 2  # a pool of two threads compiled the three kernels
    compiles = [e for e in xs if e["cat"] == "compile"]
    assert len(compiles) == 3
    by_run = {m.run_id: m for m in manifests}
    for c in compiles:
        m = by_run[c["args"]["run_id"]]
        assert names[c["tid"]] == m.thread
        assert c["args"]["passes"] == len(m.records) and c["args"]["status"] == m.status
    tid_of_thread = {}
    for c in compiles:
        key = by_run[c["args"]["run_id"]].thread_id
        assert tid_of_thread.setdefault(key, c["tid"]) == c["tid"]
    # Every record is a slice inside its compile, with index, status and +/- in args.
    passes = [e for e in xs if e["cat"] not in ("compile", "backend")]
    assert len(passes) == sum(len(m.records) for m in manifests)
    rec = {(m.run_id, r.index): r for m in manifests for r in m.records}
    owner = _owners(xs)
    for e in passes:
        comp = owner[id(e)][0]
        assert comp["cat"] == "compile"
        r = rec[(comp["args"]["run_id"], e["args"]["index"])]
        assert e["name"] == r.name and e["args"]["status"] == r.status
        assert (e["args"]["added"], e["args"]["removed"]) == (r.added, r.removed)
        assert e["dur"] == pytest.approx(r.duration_s * 1e6, abs=1.5)
        # Nested passes sit inside their parent's slice: the innermost enclosing slice is the parent.
        parent = owner[id(e)][-1]
        if r.parent is not None:
            assert parent["args"].get("index") == r.parent
        else:
            assert parent is comp
    assert any(e["args"]["depth"] > 0 for e in passes), "the pipeline has nested passes"


def _owners(xs: list[dict]) -> dict[int, list[dict]]:
    """Map each X event to the stack of X events enclosing it on its track; assert proper nesting."""
    eps = 0.01  # µs: timestamps are rounded to the nanosecond
    out: dict[int, list[dict]] = {}
    by_track: dict[tuple[int, int], list[dict]] = {}
    for e in xs:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_track.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for e in evs:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - eps:
                stack.pop()
            if stack:
                top = stack[-1]
                assert e["ts"] + e["dur"] <= top["ts"] + top["dur"] + eps, (e, top)
            out[id(e)] = list(stack)
            stack.append(e)
    return out


TRACE_EVENT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Trace Event Format (JSON object form), the events tltrace writes",
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "traceEvents": {"type": "array", "items": {"$ref": "#/$defs/event"}},
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
    },
    "$defs": {
        "event": {
            "type": "object",
            "required": ["name", "ph", "pid", "tid"],
            "properties": {
                "name": {"type": "string"},
                "cat": {"type": "string"},
                "ph": {"enum": ["X", "M", "B", "E", "i", "I", "C"]},
                "pid": {"type": "integer", "minimum": 0},
                "tid": {"type": "integer", "minimum": 0},
                "ts": {"type": "number", "minimum": 0},
                "dur": {"type": "number", "minimum": 0},
                "args": {"type": "object"},
            },
            "allOf": [
                {"if": {"properties": {"ph": {"const": "X"}}}, "then": {"required": ["ts", "dur", "cat"]}},
                {
                    "if": {"properties": {"ph": {"const": "M"}}},
                    "then": {
                        "required": ["args"],
                        "properties": {
                            "name": {
                                "enum": [
                                    "process_name",
                                    "process_sort_index",
                                    "thread_name",
                                    "thread_sort_index",
                                    "process_labels",
                                ]
                            }
                        },
                    },
                },
            ],
        }
    },
}


def _validate_trace_event_format(trace: dict) -> None:
    try:
        import jsonschema
    except ImportError:  # the same rules, by hand
        assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list)
        for e in trace["traceEvents"]:
            assert isinstance(e["name"], str) and e["ph"] in ("X", "M")
            assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["pid"] >= 0 and e["tid"] >= 0
            if e["ph"] == "X":
                assert isinstance(e["cat"], str) and e["ts"] >= 0 and e["dur"] >= 0
            else:
                assert isinstance(e["args"], dict)
        return
    jsonschema.validate(trace, TRACE_EVENT_SCHEMA)


def test_export_reads_run_as_every_command_does(threaded, tmp_path: Path):
    """One grammar: a run id is that one compile, an invocation id (or -1) the whole invocation."""
    td, trace, manifests = threaded
    out = tmp_path / "export.json"
    one = manifests[1].run_id
    res = _cli("export", "--trace-dir", str(td), "pool", one, "--chrome-trace", str(out))
    assert res.exit_code == 0, res.output
    assert "(1 compile(s))" in res.stderr
    data = json.loads(out.read_text())
    _validate_trace_event_format(data)
    assert [e["args"]["run_id"] for e in data["traceEvents"] if e.get("cat") == "compile"] == [one]
    res = _cli("export", "--trace-dir", str(td), "pool", manifests[1].invocation, "--chrome-trace", str(out))
    assert res.exit_code == 0 and f"({len(manifests)} compile(s))" in res.stderr, res.output
    runs = sorted(
        e["args"]["run_id"] for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "compile"
    )
    assert runs == sorted(m.run_id for m in manifests)
    res = _cli("export", "--trace-dir", str(td), "pool", "--chrome-trace", "-")
    assert json.loads(res.stdout)["otherData"]["compiles"] == len(manifests)


@pytest.mark.parametrize(
    "args, code, msg",
    [
        (["pool"], 2, "--chrome-trace PATH"),
        (["pool", "-9", "--chrome-trace", "x.json"], 2, "invocation -9 does not exist"),
        (["nosuch", "--chrome-trace", "x.json"], 3, "neither a run"),
        (["pool", "--bogus", "--chrome-trace", "x.json"], 2, "no such option: --bogus"),
    ],
)
def test_export_bad_input_is_one_line(threaded, tmp_path: Path, monkeypatch, args, code, msg):
    td, _, _ = threaded
    monkeypatch.chdir(tmp_path)
    res = _cli("export", "--trace-dir", str(td), *args)
    assert res.exit_code == code
    assert res.stderr.startswith("tltrace: error: ") and msg in res.stderr
    assert res.stderr.count("\n") == 1


def test_show_format_rejects_unknown(threaded):
    td, _, _ = threaded
    res = _cli("show", "--trace-dir", str(td), "--format", "yaml")
    assert res.exit_code == 2 and "not one of table, json, markdown" in res.stderr


# -- edge cases, hand-made ----------------------------------------------------------------------------
def _m(run_id: str, records: list[PassRecord], *, started=100.0, finished=101.0, status="complete", **kw):
    kw.setdefault("invocation", "inv_test")
    return RunManifest(
        run_id=run_id,
        script="s",
        kernel="k",
        started=started,
        finished=finished,
        status=status,
        records=tuple(records),
        **kw,
    )


def test_nested_slices_are_clamped_into_their_parent():
    recs = [
        PassRecord(0, "Outer", "p", duration_s=0.010, start_s=0.001),
        PassRecord(1, "Inner", "p", depth=1, parent=0, duration_s=0.004, start_s=0.0005),  # starts early
        PassRecord(2, "Inner2", "p", depth=1, parent=0, duration_s=0.020, start_s=0.009),  # ends late
        PassRecord(3, "codegen_device", "codegen", status="codegen", duration_s=0.002, start_s=0.012),
    ]
    t = timeline(_m("run_a", recs))
    s = {x.index: x for x in t.slices}
    assert s[1].start_s == pytest.approx(0.001) and s[2].end_s == pytest.approx(0.011)
    backend = [x for x in t.slices if x.kind == BACKEND]
    assert len(backend) == 1 and backend[0].start_s == pytest.approx(0.014)
    assert backend[0].duration_s == pytest.approx(1.0 - 0.014)
    p = profile([t.manifest])
    rows = {r.name: r for r in p.rows}
    assert rows["Outer"].self_s == pytest.approx(0.010 - 0.004 - 0.002)  # minus its clamped children
    assert rows[UNTIMED if UNTIMED in rows else "untimed"].total_s == pytest.approx(
        1.0 - 0.010 - 0.002 - (1.0 - 0.014)
    )


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1e300, -5.0])
def test_implausible_recorded_times_count_as_untimed_not_a_crash(bad):
    """A hand-edited manifest's Infinity / NaN / 1e300 / negative time: valid JSON out, index data, no OverflowError."""
    from tltrace.history.profile import pass_times_us

    recs = [
        PassRecord(0, "A", "p", duration_s=0.002, start_s=0.001),
        PassRecord(1, "B", "p", duration_s=bad, start_s=bad),
        PassRecord(2, "codegen_device", "codegen", status="codegen", duration_s=0.001, start_s=0.004),
    ]
    m = _m("run_c", recs)
    t = timeline(m)
    assert all(0 <= x.start_s < 10 and 0 <= x.duration_s < 10 for x in t.slices)
    assert pass_times_us(m)["B"] == 0 and pass_times_us(m)["A"] == 2000
    json.loads(json.dumps(profile([m]).to_json(), allow_nan=False))
    json.loads(json.dumps(chrome_trace([m]), allow_nan=False))


def test_records_without_start_times_are_laid_out_back_to_back():
    recs = [
        PassRecord(0, "A", "p", duration_s=0.002),
        PassRecord(1, "B", "p", depth=1, parent=0, duration_s=0.001),
        PassRecord(2, "C", "p", duration_s=0.003),
        PassRecord(3, "codegen_device", "codegen", status="codegen", duration_s=0.001),
    ]
    t = timeline(_m("run_b", recs, schema_version=1, invocation=None))
    assert not t.exact
    assert [(x.start_s, x.end_s) for x in t.slices] == [
        (0, 0.002),
        (0, 0.001),
        (0.002, 0.005),
        (0.005, 0.006),
    ]
    assert not [x for x in t.slices if x.kind == BACKEND]  # no start times: the rest is untimed
    trace = chrome_trace([t.manifest])
    _validate_trace_event_format(trace)
    _owners([e for e in trace["traceEvents"] if e["ph"] == "X"])


def test_compiles_without_thread_never_overlap_on_one_track():
    a = _m(
        "run_20260101_000000_000000_7_aa",
        [PassRecord(0, "A", "p", duration_s=0.5)],
        started=10.0,
        finished=11.0,
    )
    b = _m(
        "run_20260101_000000_500000_7_bb",
        [PassRecord(0, "A", "p", duration_s=0.5)],
        started=10.5,
        finished=11.5,
    )
    c = _m(
        "run_20260101_000002_000000_7_cc",
        [PassRecord(0, "A", "p", duration_s=0.5)],
        started=12.0,
        finished=12.5,
    )
    trace = chrome_trace([a, b, c])
    comp = {e["args"]["run_id"]: e["tid"] for e in trace["traceEvents"] if e.get("cat") == "compile"}
    assert comp[a.run_id] != comp[b.run_id] and comp[c.run_id] == comp[a.run_id]
    _owners([e for e in trace["traceEvents"] if e["ph"] == "X"])


def test_markdown_puts_failures_first_and_escapes_names():
    from tltrace.cli.profile import markdown

    ok = _m("run_ok", [PassRecord(0, "A", "p", duration_s=0.1, start_s=0.0)], started=1.0, finished=2.0)
    bad = _m(
        "run_bad",
        [PassRecord(0, "A|<b>x</b>", "p", status="failed", duration_s=0.1, start_s=0.0, error="boom")],
        started=3.0,
        finished=4.0,
        status="error",
    )
    md = markdown([ok, bad], top=None)
    rows = [line for line in md.splitlines() if line.startswith("| ✅") or line.startswith("| ❌")]
    assert rows[0].startswith("| ❌") and "`run_bad`" in rows[0] and "`run_ok`" in rows[1]
    assert "<b>" not in md and "A\\|&lt;b&gt;x&lt;/b&gt; (#0)" in rows[0]


# -- the profile view in Chromium ---------------------------------------------------------------------
@pytest.fixture
def open_page(open_page):
    """conftest's open_page in a window wide enough for the profile's bars."""
    return lambda path: open_page(path, viewport={"width": 1400, "height": 900})


@pytest.mark.browser
def test_profile_view_of_a_real_compile_report(threaded, open_page):
    td, _, manifests = threaded
    m = manifests[0]
    page = open_page(td / "pool" / ".run_records" / m.run_id / "report.html")
    assert page.locator("#tl-profile").is_hidden()
    page.click("#tl-profile-btn")
    bars = page.locator(".tl-prof-bar")
    assert bars.count() == len(m.records)  # a bar for every pass, in pipeline order
    assert page.eval_on_selector_all(".tl-prof-bar", "bs => bs.map(b => +b.dataset.index)") == [
        r.index for r in m.records
    ]
    assert page.locator("polyline.tl-prof-lines").count() == 1  # IR size after each pass
    nested = [r for r in m.records if r.depth > 0]
    assert nested and page.locator(".tl-prof-bar.nested").count() == len(nested)
    assert page.locator(".tl-prof-bracket").count() == len({r.parent for r in nested})
    summary = page.locator(".tl-prof-summary").text_content()
    assert "backend build" in summary and "compile" in summary
    # Clicking a bar opens that pass (a nested one here).
    target = nested[0]
    page.locator(f".tl-prof-bar[data-index='{target.index}']").click()
    assert page.locator("li.tl-pass.selected").get_attribute("data-index") == str(target.index)
    assert target.name in page.locator(".tl-pass-head h2").text_content()
    page.click(".tl-prof-scale")  # log <-> linear redraws every bar
    assert page.locator(".tl-prof-bar").count() == len(m.records)


@pytest.mark.browser
def test_profile_view_of_the_invocation_index(threaded, open_page):
    td, _, manifests = threaded
    page = open_page(td / "pool" / "report.html")
    page.click("#tl-profile-btn")
    names = page.eval_on_selector_all(".tl-prof-aggrow", "gs => gs.map(g => g.dataset.name)")
    res = _cli("show", "--trace-dir", str(td), "pool", "--profile", "--json", "--top", "30")
    expected = [r["name"] for r in json.loads(res.stdout)["rows"]]
    assert len(names) == min(30, json.loads(res.stdout)["rows_total"])
    # The same ranking as show --profile (ties and µs rounding aside: compare the sets of the top 10).
    assert set(names[:10]) == set(expected[:10])
    rows = page.evaluate(
        "window.tltraceProfile.aggregateRows("
        + json.dumps(
            [
                {"run": "a", "wall": 1, "times": {"X": 0.1, "Y": 0.3}},
                {"run": "b", "wall": 1, "times": {"X": 0.3}},
            ]
        )
        + ")"
    )
    assert rows[0]["name"] == "X" and rows[0]["total"] == pytest.approx(0.4) and rows[0]["compiles"] == 2
    assert rows[0]["min"] == pytest.approx(0.1) and rows[0]["max"] == pytest.approx(0.3)


@pytest.mark.browser
def test_profile_view_of_a_500_pass_report(open_page, tmp_path: Path):
    """The profile view draws every pass of a 500-pass report (bench/report.py measures how fast)."""
    from .synthetic import write_synthetic_report

    report = write_synthetic_report(500, tmp_path / "synthetic")
    page = open_page(report)
    page.click("#tl-profile-btn")
    assert page.locator(".tl-prof-bar").count() == 500
