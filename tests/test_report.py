"""The HTML report's file: append-only, each text once, safe data, the invocation index, rebuilt from run records."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from tltrace.history.report_reads import compile_report
from tltrace.render.html import (
    REPORT_NAME,
    HtmlReportListener,
    chunk,
    index_head,
    report_head,
    write_report,
)
from tltrace.render.pages import chunk_values, report_texts
from tltrace.session.events import PassRecorded, RunStarted

from .synthetic import synthetic_events, write_synthetic_report

CHUNK_RE = re.compile(rb'<script type="application/json" class="tl-d">(.*?)</script>\n', re.S)


def chunks(path: Path) -> list[dict]:
    """The page's chunk objects: batches opened, packed ones inflated by zlib (pages.chunk_values)."""
    data = path.read_bytes()
    assert data.startswith(report_head())
    out = chunk_values(data[len(report_head()) :])
    assert None not in out
    return out  # type: ignore[return-value]


def index_chunks(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.startswith(index_head()), "not an index"
    return [json.loads(m.group(1)) for m in CHUNK_RE.finditer(data, len(index_head()))]


def index_rows(path: Path) -> dict[str, dict]:
    """run_id -> its last row, as the page reads them."""
    rows: dict[str, dict] = {}
    for c in index_chunks(path):
        if c["t"] == "c":
            rows[c["run_id"]] = c
    return rows


def test_chunk_escapes_markup_so_data_cannot_close_the_script():
    text = '</script><script>alert(1)</script><!-- & <img onerror="x">\u2028'
    raw = chunk({"t": "text", "h": "x", "s": text})
    body = raw[len(b'<script type="application/json" class="tl-d">') : -len(b"</script>\n")]
    assert b"<" not in body and b">" not in body and b"&" not in body
    assert json.loads(body)["s"] == text


# Every control character, DEL, the C1 controls, U+2028/U+2029 and the markup characters, in a
# value and in a key.
HARD = "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)) + "<>&'\"\\/"


def test_chunk_escapes_every_control_character_and_the_page_reads_it_back():
    """Oracles: Python's HTML parser finds the element's text to be the body whole (nothing in it
    ends the script element), the body holds no byte below 0x20, DEL, C1 or U+2028/9, and
    JSON.parse (Node's, as the page's; else Python's) gives the value back."""
    import html.parser
    import shutil
    import subprocess

    value = {"t": "text", "s": HARD, HARD: [HARD]}
    raw = chunk(value)
    body = raw[len(b'<script type="application/json" class="tl-d">') : -len(b"</script>\n")].decode()
    assert not [c for c in body if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029<>&"]

    class Script(html.parser.HTMLParser):
        data: list[str] = []

        def handle_data(self, data: str) -> None:
            self.data.append(data)

    p = Script()
    p.feed(raw.decode())
    p.close()
    assert p.data == [body, "\n"]
    assert json.loads(body) == value
    if shutil.which("node"):
        js = "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.stringify(JSON.parse(s))))"
        out = subprocess.run(["node", "-e", js], input=body.encode(), capture_output=True, check=True).stdout
        assert json.loads(out) == value


def test_chunk_keeps_lone_surrogates_as_json_escapes():
    text = "bad byte: " + b"\xff".decode("utf-8", "surrogateescape")
    body = chunk({"s": text})[len(b'<script type="application/json" class="tl-d">') : -len(b"</script>\n")]
    assert json.loads(body.decode("utf-8"))["s"] == text


def test_report_is_append_only_and_stores_each_text_once(tmp_path: Path):
    listener = HtmlReportListener()
    events = list(synthetic_events(80, tmp_path))
    run_dir = events[0].run_dir
    report = run_dir / REPORT_NAME
    sizes = []
    for event in events:
        listener(event)
        if report.exists():
            sizes.append(report.stat().st_size)
    listener.close()
    assert sizes == sorted(sizes)  # never rewritten, only grown
    # bytes written == the final files: the compile's report and the script's index
    assert listener.bytes_written == report.stat().st_size + (tmp_path / REPORT_NAME).stat().st_size
    data = chunks(report)
    texts = [c["h"] for c in data if c["t"] == "text"]
    assert len(texts) == len(set(texts))
    recs = [c for c in data if c["t"] == "rec"]
    assert [r["index"] for r in recs] == list(range(80))
    needed = {r.get(k) for r in recs for k in ("before_hash", "after_hash")} - {None}
    assert needed <= set(texts)
    assert data[-1]["t"] == "meta" and data[-1]["status"] == "complete"
    assert "before_file" not in recs[0]


def test_index_lists_every_compile_of_the_invocation_and_links_its_report(tmp_path: Path):
    listener = HtmlReportListener()
    runs = []
    for i in range(4):
        events = list(
            synthetic_events(
                6,
                tmp_path,
                seed=i,
                invocation="inv-1",
                signature=f"k_{i}x128_ab{i}",
                failed_at=3 if i == 2 else None,
            )
        )
        for e in events:
            listener(e)
        runs.append(events[0].run_dir)
    index = tmp_path / REPORT_NAME
    assert index.is_file() and not index.is_symlink()
    rows = index_rows(index)
    assert list(rows) == [r.name for r in runs]
    assert [rows[r.name]["signature"] for r in runs] == [f"k_{i}x128_ab{i}" for i in range(4)]
    assert rows[runs[2].name]["status"] == "error" and rows[runs[2].name]["failed_at"].startswith("Pass3")
    assert all(rows[r.name]["status"] == "complete" for r in (runs[0], runs[1], runs[3]))
    meta = index_chunks(index)[0]
    assert meta["t"] == "imeta" and meta["invocation"] == "inv-1" and meta["base"] == ".run_records/"
    for r in runs:  # the page links base + run_id + /report.html: each exists
        assert (tmp_path / meta["base"] / r.name / REPORT_NAME).is_file()
    # Each compile report links back; the switcher's list arrives when the invocation ends.
    first = chunks(runs[0] / REPORT_NAME)
    assert first[0]["index"] == "../../report.html" and first[0]["signature"] == "k_0x128_ab0"
    assert not [c for c in first if c["t"] == "sibs"]
    listener.close()
    sibs = [c for c in chunks(runs[0] / REPORT_NAME) if c["t"] == "sibs"]
    assert len(sibs) == 1 and [s[0] for s in sibs[0]["runs"]] == [r.name for r in runs]


def test_a_new_invocation_replaces_the_index_atomically(tmp_path: Path):
    old = write_synthetic_report(5, tmp_path, seed=1, invocation="inv-old")
    index = tmp_path / REPORT_NAME
    assert list(index_rows(index)) == [old.parent.name]
    new = write_synthetic_report(5, tmp_path, seed=2, invocation="inv-new")
    assert list(index_rows(index)) == [new.parent.name]
    assert index_chunks(index)[0]["invocation"] == "inv-new"
    assert old.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_index_replaces_an_old_symlink(tmp_path: Path):
    target = tmp_path / "elsewhere.html"
    target.write_text("not ours")
    (tmp_path / REPORT_NAME).symlink_to(target.name)
    report = write_synthetic_report(3, tmp_path)
    index = tmp_path / REPORT_NAME
    assert not index.is_symlink() and list(index_rows(index)) == [report.parent.name]
    assert target.read_text() == "not ours"


def test_threads_and_processes_of_one_invocation_share_one_index(tmp_path: Path):
    import subprocess
    import sys

    listeners = [HtmlReportListener(), HtmlReportListener()]  # two processes' worth of listeners
    streams = [
        list(synthetic_events(8, tmp_path, seed=i, invocation="inv-x", signature=f"s{i}")) for i in range(8)
    ]

    def feed(k: int) -> None:
        for stream in streams[k::2]:
            for e in stream:
                listeners[k](e)

    threads = [threading.Thread(target=feed, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from pathlib import Path; from tests.synthetic import write_synthetic_report;"
        "[write_synthetic_report(4, Path(sys.argv[1]), seed=100 + i, invocation='inv-x', signature=f'p{i}') "
        "for i in range(3)]"
    )
    repo = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code, str(tmp_path), str(repo)], check=True)
    rows = index_rows(tmp_path / REPORT_NAME)
    assert len(rows) == 11 and all(r["status"] == "complete" for r in rows.values())
    assert sorted(r["signature"] for r in rows.values()) == sorted(
        [f"s{i}" for i in range(8)] + ["p0", "p1", "p2"]
    )


def test_failed_run_writes_error_in_record_and_final_meta(tmp_path: Path):
    report = write_synthetic_report(30, tmp_path, failed_at=12)
    data = chunks(report)
    failed = [c for c in data if c["t"] == "rec" and c["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["error"].startswith("TVMError")
    assert data[-1]["status"] == "error"


def test_late_error_for_a_pending_failed_pass_is_appended(tmp_path: Path):
    listener = HtmlReportListener()
    events = list(synthetic_events(10, tmp_path, failed_at=4))
    for event in events[:-1]:
        if isinstance(event, PassRecorded) and event.record.status == "failed":
            from dataclasses import replace

            event = replace(event, record=replace(event.record, error=None))
        listener(event)
    listener(events[-1])
    data = chunks(events[0].run_dir / REPORT_NAME)
    failed = [c for c in data if c["t"] == "rec" and c["index"] == 4]
    assert len(failed) == 2 and "error" not in failed[0] and failed[1]["error"].startswith("TVMError")


def test_listener_serves_many_runs_from_many_threads(tmp_path: Path):
    listener = HtmlReportListener()
    streams = [list(synthetic_events(40, tmp_path / f"k{i}", seed=i, kernel=f"k{i}")) for i in range(6)]

    def feed(events):
        for e in events:
            listener(e)

    threads = [threading.Thread(target=feed, args=(s,)) for s in streams]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listener.close()
    for i, s in enumerate(streams):
        data = chunks(s[0].run_dir / REPORT_NAME)
        assert [c["index"] for c in data if c["t"] == "rec"] == list(range(40))
        assert {c.get("kernel") for c in data if c["t"] == "meta"} == {f"k{i}"}


def test_listener_never_raises_on_io_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    listener = HtmlReportListener()
    events = list(synthetic_events(5, blocker))  # run dir would be under a plain file
    for e in events:
        listener(e)
    listener.close()
    err = capsys.readouterr().err
    assert err.count("could not write the HTML report") == 1


def test_close_leaves_an_unfinished_report_readable(tmp_path: Path):
    listener = HtmlReportListener()
    events = list(synthetic_events(20, tmp_path))
    for e in events[:10]:
        listener(e)
    listener.close()
    data = chunks(events[0].run_dir / REPORT_NAME)
    assert len([c for c in data if c["t"] == "rec"]) == 9
    assert data[0]["t"] == "meta" and "status" in data[0]


def test_late_listener_opens_on_first_pass(tmp_path: Path):
    listener = HtmlReportListener()
    events = [e for e in synthetic_events(6, tmp_path) if not isinstance(e, RunStarted)]
    for e in events:
        listener(e)
    assert (events[0].run_dir / REPORT_NAME).exists()
    assert list(index_rows(tmp_path / REPORT_NAME)) == [events[0].run_dir.name]


def _store_run(tmp_path: Path, n: int, *, finish: bool = True, listener=None, **kw) -> Path:
    """Write a synthetic run to disk through the capture engine's own writer (TraceSession).

    The synthetic events' records and texts go into `TraceSession.add_record` and
    `finish`, the very calls the TileLang observer makes, so the run on disk is what
    a real capture writes; `listener` gets the events the session emits.
    """
    from dataclasses import replace

    from tltrace.config import Settings
    from tltrace.format.records import CODEGEN
    from tltrace.session.capture import TraceSession

    settings = Settings(mode="html", trace_dir=tmp_path, script_name="synthetic", quiet=True)
    events = synthetic_events(n, tmp_path / "unused", **kw)
    started = next(events)
    assert isinstance(started, RunStarted)
    session = TraceSession(settings, listener or (lambda event: None), session_name=started.manifest.kernel)
    for event in events:
        if isinstance(event, PassRecorded):
            r = replace(event.record, before_file=None, after_file=None, before_hash=None, after_hash=None)
            session.add_record(r, event.before, event.after, "cpp" if r.status == CODEGEN else "tir")
    assert session.store is not None
    if finish:
        session.finish(None)
    else:
        session.store.close()
    return session.store.run_dir


def test_write_report_rebuilds_the_same_data(tmp_path: Path):
    """The report rebuilt from a run's records carries what the live report showed during capture."""
    listener = HtmlReportListener(link=False)
    run_dir = _store_run(tmp_path / "s", 40, hostile=True, listener=listener)
    listener.close()
    live = run_dir / REPORT_NAME
    out = write_report(compile_report(run_dir), tmp_path / "rebuilt.html")
    rebuilt = chunks(out)
    want = [c for c in chunks(live) if c["t"] == "rec"]
    got = [c for c in rebuilt if c["t"] == "rec"]
    assert len(got) == 40
    assert [(c["index"], c["name"], c["status"], c.get("after_hash")) for c in got] == [
        (c["index"], c["name"], c["status"], c.get("after_hash")) for c in want
    ]
    assert report_texts(rebuilt) == report_texts(chunks(live))
    # the rebuilt report stores a pass's output as its changes to the pass's input
    assert any("d" in c for c in rebuilt if c["t"] == "text")


def test_write_report_reads_records_log_of_an_unfinished_run(tmp_path: Path):
    run_dir = _store_run(tmp_path, 25, finish=False)
    with open(run_dir / "records.jsonl", "a") as fh:
        fh.write('{"index": 99, "na')  # cut short by a kill
    out = write_report(compile_report(run_dir))
    assert out == run_dir / REPORT_NAME
    data = chunks(out)
    assert len([c for c in data if c["t"] == "rec"]) == 25
    assert data[0]["status"] == "running"


def test_write_report_names_the_problem(tmp_path: Path):
    from tltrace.errors import RecordsError

    with pytest.raises(RecordsError, match="no manifest.json"):
        write_report(compile_report(tmp_path))


def test_real_run_writes_a_report(run_cli, examples_dir: Path, tmp_path: Path):
    trace = tmp_path / "trace"
    result = run_cli("run", examples_dir / "elementwise_add.py", "--mode", "html", "--trace-dir", trace)
    assert result.exit_code == 0, result.output
    index = trace / "elementwise_add" / REPORT_NAME
    rows = index_rows(index)
    assert len(rows) == 1
    report = trace / "elementwise_add" / ".run_records" / next(iter(rows)) / REPORT_NAME
    # html mode streams no diffs, but says where the report went (one summary line per kernel).
    shown = report.relative_to(Path.cwd())  # under the working directory: said relative to it
    assert f"report: {shown}" in result.stdout and "CHANGED" not in result.stdout
    data = chunks(report)
    recs = [c for c in data if c["t"] == "rec"]
    assert len(recs) > 20 and any(r["status"] == "codegen" for r in recs)
    assert data[-1]["t"] == "meta" and data[-1]["status"] == "complete" and data[-1]["kernel"] == "add"
    # Rebuilt from the stored records, the report carries the same passes.
    rebuilt = chunks(write_report(compile_report(report.parent), tmp_path / "again.html"))
    assert [c["index"] for c in rebuilt if c["t"] == "rec"] == sorted(r["index"] for r in recs)


def test_an_index_that_cannot_be_written_costs_one_warning_not_the_report(tmp_path: Path, capsys):
    (tmp_path / REPORT_NAME).mkdir()  # the index's place is taken by a directory
    report = write_synthetic_report(8, tmp_path)  # the index fails at the compile's start and at its end
    assert len([c for c in chunks(report) if c["t"] == "rec"]) == 8
    assert capsys.readouterr().err.count("could not write the index") == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_switcher_of_a_large_invocation_lists_the_nearest_compiles(tmp_path: Path):
    from tltrace.render.html import SWITCHER_SIZE

    listener = HtmlReportListener()
    runs = []
    for i in range(SWITCHER_SIZE + 9):
        events = list(synthetic_events(3, tmp_path, seed=i, invocation="big", signature=f"s{i:02d}", lines=5))
        for e in events:
            listener(e)
        runs.append(events[0].run_dir.name)
    listener.close()
    assert len(index_rows(tmp_path / REPORT_NAME)) == len(runs)  # the index lists every compile
    for k in (0, 25, len(runs) - 1):
        sibs = [c for c in chunks(tmp_path / ".run_records" / runs[k] / REPORT_NAME) if c["t"] == "sibs"][0][
            "runs"
        ]
        ids = [s[0] for s in sibs]
        assert len(ids) == SWITCHER_SIZE and runs[k] in ids and ids == sorted(ids, key=runs.index)
