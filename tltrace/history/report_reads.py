"""The report model read from the records: every read the HTML report needs, in one place.

`compile_report(run_dir)` and `index_report(script_dir, run_dirs)` build the report
model (history/report_model.py) that render/html.py and render/index.py turn into HTML
without reading anything. `LiveReads` is what the report written while a compile runs
asks of the records: the sources generated where an edit was compiled (when the compile
ends), the earlier invocations' compiles and the compile's launches (when the invocation
closes), a Python source a source map names.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import RecordsError
from ..format import build as fb
from ..format import launches as log_format
from ..format.explained import cached as cached_explanation
from ..format.layout import NCU_PROFILE, REPORT, text_hash
from ..format.records import FAILED, RunManifest
from ..format.sourcemap import read_source
from ..format.texts import generated_text, text_of
from .failsite import fail_site
from .hotlines import hot_lines
from .invocations import invocation_key, invocations
from .launches import Launch, read_launches
from .loading import load_manifest, load_run, run_dirs
from .report_model import CompileReport, Earlier, IndexedRun, IndexReport, RecordTexts, Sibling, Text
from .sourcemaps import load as load_maps
from .summary import CompileSummary

EARLIER_RUNS = 40  # run directories read (newest first) for a report's earlier invocations
REPORT_LAUNCHES = 50  # launches a compile's report lists (the rest are counted)


def compile_report(run_dir: Path, *, linked: bool = True) -> CompileReport:
    """Return the report model of one run directory; RecordsError when it holds no readable manifest.

    Texts are read through history/texts.py (paths stay inside the run directory, a deleted
    per-pass file falls back to the stored object by hash); a text no longer on disk is None.
    `linked`: the report will live in its run directory, so its invocation's compiles and
    the earlier invocations' are read too.
    """
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir, derive=True)
    maps = load_maps(run_dir)
    records = []
    known: dict[str, str] = {}  # hash -> text: a pass's input is read once, as the output before it
    for rec in manifest.records:
        texts: dict[str, str | None] = {"before": None, "after": None}
        updates: dict[str, Any] = {}
        for side in ("before", "after"):
            if side == "after" and rec.after_file is None and rec.after_hash is None:
                continue
            key = f"{side}_hash"
            digest = getattr(rec, key)
            text = known.get(digest) if digest else None
            if text is None:
                text = text_of(run_dir, rec, side, errors="surrogateescape")
            if text is None:
                continue
            texts[side] = text
            updates[key] = digest = digest or text_hash(text)
            known[digest] = text
        records.append(
            RecordTexts(
                replace(rec, **updates) if updates else rec,
                texts["before"],
                texts["after"],
                maps.of(rec.index, "before"),
                maps.of(rec.index, "after"),
            )
        )
    siblings: tuple[Sibling, ...] = ()
    earlier: tuple[Earlier, ...] = ()
    if linked and manifest.invocation:
        siblings = invocation_siblings(run_dir.parent.parent, manifest.invocation)
        earlier = tuple(earlier_compiles(run_dir.parent.parent, manifest.invocation, run_dir.name))
    launches, more = launch_rows(run_dir.parent.parent, manifest.invocation).get(run_dir.name, ((), 0))
    return CompileReport(
        launches=launches,
        launches_more=more,
        hot=hot_rows(run_dir),
        fail_site=fail_site_json(run_dir, manifest),
        layout_why=layout_why(run_dir, manifest),
        run_dir=run_dir,
        manifest=manifest,
        records=tuple(records),
        sources=dict(maps.sources),
        generated=tuple(generated_texts(run_dir, manifest)),
        linked=linked,
        siblings=siblings,
        earlier=earlier,
    )


def sibling_of(manifest: RunManifest | None, run_id: str) -> Sibling:
    """Return how the switcher lists one compile (its compile summary's label and status)."""
    s = CompileSummary.of(manifest, run_id, status=manifest.status if manifest is not None else None)
    found = Sibling.of_row(s.to_json())
    return found if found is not None else Sibling(run_id, run_id, "?")


def invocation_siblings(script_dir: Path, invocation: str) -> tuple[Sibling, ...]:
    """Return the compiles of one invocation of a script, in start order, when it has more than one."""
    found = [inv for inv in invocations(script_dir) if inv.id == invocation]
    if not found or len(found[0].runs) < 2:
        return ()
    return tuple(sibling_of(r.manifest, r.run_id) for r in found[0].runs)


def generated_texts(run_dir: Path, manifest: RunManifest) -> list[Text]:
    """Return the sources TileLang generated where an edit was compiled (format/build.py's `edits`),
    in order; one whose copy is not readable is left out."""
    out = []
    for e in fb.edits(fb.of(manifest)):
        digest = e.get("generated_hash")
        if not isinstance(digest, str):
            continue
        text = generated_text(run_dir, e)
        if text is not None:
            out.append(Text(digest, text))
    return out


def earlier_compiles(script_dir: Path, invocation: str, before: str) -> list[Earlier]:
    """Return the compiles of other invocations among the EARLIER_RUNS run directories named before
    `before` that have a report, newest first.

    Read once per invocation's close (render/index.py `earlier_chunk` then filters by kernel),
    so an invocation of many compiles reads at most EARLIER_RUNS manifests, not that many each.
    """
    earlier = [d for d in run_dirs(Path(script_dir)) if d.name < before]
    out: list[Earlier] = []
    for d in reversed(earlier[-EARLIER_RUNS:]):
        if not (d / REPORT).is_file():  # a terminal-mode run: no report to load in the frame
            continue
        try:
            m = load_manifest(d)
        except RecordsError:
            continue
        if m.invocation == invocation:
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.started)) if m.started else "?"
        state = "" if m.status in (None, "complete") else f" ({m.status})"
        out.append(Earlier(d.name, m.kernel, f"{when} {m.signature or m.kernel or d.name}{state}"))
    return out


def index_report(script_dir: Path, run_dirs_: list[Path]) -> IndexReport:
    """Return the index model of one invocation (its compiles' run dirs, in order); RecordsError
    when there are none."""
    script_dir = Path(script_dir)
    runs = [load_run(Path(d), derive=True) for d in run_dirs_]
    if not runs:
        raise RecordsError(f"no compiles to index under {script_dir}")
    invs = [i for i in invocations(script_dir) if i.runs]  # the newest invocation that has compiles
    newest = bool(invs) and {r.run_id for r in invs[-1].runs} == {r.run_id for r in runs}
    return IndexReport(
        script_dir=script_dir,
        invocation=invocation_key(runs[0]),
        runs=tuple(IndexedRun(r.run_id, r.manifest) for r in runs),
        newest=newest,
        first_run_dir=runs[0].path,
    )


_SOURCES_KEPT = 64  # Python sources LiveReads keeps read (each at most MAX_SOURCE_BYTES)


class LiveReads:
    """What the report written while a compile runs reads of the records (render/html.py's listener
    is handed one by the entry points' listeners; without it, it reads nothing).

    One per process: the Python sources the maps name (the kernel's script, TileLang's files) are
    read once while their file stays the same (inode, size, modification time), not once per
    compile report (an autotune's hundred compiles of one script)."""

    def __init__(self) -> None:
        self._sources: dict[str, tuple[tuple[int, int, int], str]] = {}

    def generated(self, run_dir: Path, manifest: RunManifest) -> list[Text]:
        return generated_texts(run_dir, manifest)

    def earlier(self, script_dir: Path, invocation: str, before: str) -> list[Earlier]:
        return earlier_compiles(script_dir, invocation, before)

    def source(self, path: str) -> str | None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return read_source(path)  # gone, or an IPython cell (linecache)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        kept = self._sources.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        text = read_source(path)
        if text is not None and stat.S_ISREG(st.st_mode):
            if len(self._sources) >= _SOURCES_KEPT:
                try:  # the oldest goes (another thread may be reading too)
                    self._sources.pop(next(iter(self._sources)), None)
                except (RuntimeError, StopIteration):
                    pass
            self._sources[path] = (key, text)
        return text

    def fail_site(self, run_dir: Path, manifest: RunManifest) -> dict[str, Any] | None:
        return fail_site_json(run_dir, manifest)

    def launches(self, script_dir: Path, invocation: str) -> dict[str, LaunchRows]:
        return launch_rows(script_dir, invocation)


def layout_why(run_dir: Path, manifest: RunManifest) -> tuple[str, ...]:
    """The lines of a failed compile's layout explanation cached beside the run (layouts/explain), or ()."""
    if manifest.status != "error":
        return ()
    why = cached_explanation(Path(run_dir))
    return tuple(str(x) for x in why.get("lines") or ()) if why else ()


def fail_site_json(run_dir: Path, manifest: RunManifest) -> dict[str, Any] | None:
    """The compile's first failed pass's site as JSON (history/failsite), or None; never raises
    (a report is written whatever its records hold)."""
    if not any(r.status == FAILED for r in manifest.records):
        return None
    try:
        site = fail_site(Path(run_dir), manifest)
    except Exception:
        return None
    return site.to_json() if site is not None else None


def launch_row(x: Launch, number: int) -> dict[str, Any]:
    """One launch as the report's table lists it: its number among its compile's launches, calling
    line, grid, block and the arguments' parameter names, shapes and dtypes (a number: its type and value)."""
    keep = ("param", "shape", "dtype", "type", "value")
    return {
        "n": number,
        "site": [x.site[0], x.site[1]] if x.site else None,
        "grid": list(x.grid) if x.grid is not None else None,
        "block": list(x.block) if x.block is not None else None,
        "args": [{k: a[k] for k in keep if k in a} for a in x.args],
    }


LaunchRows = tuple[tuple[dict[str, Any], ...], int]  # the rows a report lists, and how many more


def launch_rows(script_dir: Path, invocation: str | None) -> dict[str, LaunchRows]:
    """{run id: its launches as the report lists them, the first REPORT_LAUNCHES, and how many more}
    of an invocation (its launch log, `run --launches`, read once, each launch joined to its compile
    among all the invocation's: history/launches.py); {} without a log; never raises. A compile's
    launches are numbered from 1, as `show SCRIPT RUN --launches` numbers them."""
    if not invocation or not log_format.path_of(script_dir, invocation).is_file():
        return {}  # not run with --launches: no compile's manifest is read
    try:
        runs = next((inv.runs for inv in invocations(Path(script_dir)) if inv.id == invocation), ())
        got = read_launches(Path(script_dir), invocation, tuple(runs), True).launches
    except Exception:
        return {}
    by_run: dict[str, list[Launch]] = {}
    for x in got:
        if x.run_id is not None:
            by_run.setdefault(x.run_id, []).append(x)
    return {
        run_id: (
            tuple(launch_row(x, k + 1) for k, x in enumerate(xs[:REPORT_LAUNCHES])),
            max(0, len(xs) - REPORT_LAUNCHES),
        )
        for run_id, xs in by_run.items()
    }


def hot_rows(run_dir: Path) -> tuple[dict[str, Any], ...]:
    """Each Python line's share of the compile's warp-stall samples (show --hot's fold: history/hotlines)
    with its top stall reason, when `run --ncu` profiled it; () otherwise; never raises."""
    if not (Path(run_dir) / NCU_PROFILE).is_file():
        return ()
    try:
        kernels = hot_lines(Path(run_dir))
    except Exception:
        return ()
    return tuple(
        {
            "kernel": k["kernel"],
            "file": x["file"],
            "line": x["line"],
            "share": x["share"],
            "stall": x["stalls"][0][0] if x["stalls"] else None,
        }
        for k in kernels
        for x in k["lines"]
    )
