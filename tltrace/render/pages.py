"""The report pages' fixed heads and their data chunks (one page builder for every report).

A page is an asset template (render/assets/*.html) with its CSS and JS inlined and
allowed by their hashes in the page's Content-Security-Policy, then data chunks:
`<script type="application/json" class="tl-d">` elements, one JSON object each.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..format.layout import REPORT
from ..format.records import PassRecord, RunManifest
from .bundle import asset_text, minify_css, minify_js, script_order
from .delta import decode, text_fields
from .safejson import script_json

REPORT_NAME = REPORT
_META_FIELDS = (
    "run_id",
    "script",
    "kernel",
    "target",
    "target_host",
    "backend",
    "tilelang_version",
    "tltrace_version",
    "command",
    "cwd",
    "started",
    "finished",
    "status",
    "error",
    "mode",
    "invocation",
    "signature",
    "launch",
    "params",
    "thread",
    "stack",  # the call site: the header's "called from" (callsites.js)
    "remarks",  # run --remarks: each pass's stderr (report-remarks.js)
)
_CHUNK_OPEN = b'<script type="application/json" class="tl-d">'
_CHUNK_CLOSE = b"</script>\n"
# A compile report's larger data chunks travel packed (`data_chunk`, `Packer`): deflated and in base64,
# in an element of one of these types that core.js's chunkText inflates (unpack.js `tlInflate`).
# A chained one (`Packer`) is deflated with the packed chunks before it in the page as its dictionary
# (their JSON, the last 32 KB): a pass's chunk then costs what is new in it.
# zlib's level for both: 4, the first of its lazy-matching levels. On an sm_90a lowering's chunks,
# the chunks deflated one by one at level 9 (before) took 2 to 3.5 times its CPU for 10% fewer bytes,
# level 6 1.4x for 7% fewer, level 1 0.7x for 16% more (docs/benchmarks.md, "Issue 51, round 5:
# compression and the html listener").
LEVEL = 4
# Where the CPU is not on a compile's path, or the report carries a CUDA compile's PTX and SASS
# (hundreds of KB of JSON, next to a ptxas build of seconds): level 9, which keeps such a one-kernel
# report within issue 54's 150 KB (tests/test_stages.py).
SMALLEST = 9
DATA_PACK_TYPE = "tl/z"
CHAIN_PACK_TYPE = "tl/zc"
_PACKED_OPEN = f'<script type="{DATA_PACK_TYPE}" class="tl-d">'.encode("ascii")
_CHAINED_OPEN = f'<script type="{CHAIN_PACK_TYPE}" class="tl-d">'.encode("ascii")
PACK_MIN = 200  # bytes of JSON below which a chunk stays as it is (packing would not pay)
BATCH_SIZE = (
    32 * 1024
)  # bytes of JSON in one batch of a rebuilt report's chunks: a copy cut short keeps those before the cut
_WINDOW = 32 * 1024  # deflate's window: the most of a dictionary it can use
# As a browser reads a page cut short: a chunk's element ends at its `</script>`, or at the end of
# the file (an element left open holds what is there; a packed one that was cut does not inflate).
_ANY_CHUNK = re.compile(
    rb'<script type="(application/json|tl/zc?)" class="tl-d">(.*?)(?:</script>\n?|\Z)', re.S
)
_HEAD_CACHE: dict[str, bytes] = {}


# -- data encoding ---------------------------------------------------------------------------------
def chunk(value: dict[str, Any]) -> bytes:
    """Return one data chunk: a JSON script element holding `value`."""
    # A lone surrogate (bad bytes decoded with surrogateescape) becomes the JSON escape \\udcXX.
    body = script_json(value).encode("utf-8", "backslashreplace")
    return _CHUNK_OPEN + body + _CHUNK_CLOSE


def _deflate(body: bytes, level: int = LEVEL) -> bytes:
    z = zlib.compressobj(level, zlib.DEFLATED, -15)
    return base64.b64encode(z.compress(body) + z.flush())


def _body(value: dict[str, Any] | list[dict[str, Any]], pieces: list[str] | None = None) -> bytes:
    """The JSON of a chunk: one object, or a batch's array (`pieces`: its objects' JSON, made already)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
        if pieces is not None:
            return pieces[0].encode("utf-8", "backslashreplace")
    if pieces is not None:  # what script_json(value) writes: the compact array of the pieces
        return ("[" + ",".join(pieces) + "]").encode("utf-8", "backslashreplace")
    return script_json(value).encode("utf-8", "backslashreplace")


def data_chunk(value: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    """Return one of a compile report's data chunks: a chunk object, or a batch of them (a JSON
    array, read in order), packed when that is smaller: deflated (raw, RFC 1951) and in base64, as
    the report's scripts are (`pack`); core.js's chunkValues reads either."""
    body = _body(value)
    if len(body) >= PACK_MIN:
        packed_body = _deflate(body)
        if len(packed_body) + len(_PACKED_OPEN) < len(body) + len(_CHUNK_OPEN):
            return _PACKED_OPEN + packed_body + _CHUNK_CLOSE
    return _CHUNK_OPEN + body + _CHUNK_CLOSE


# An empty final block (fixed Huffman codes, the end-of-block code alone): where each chained chunk's
# part of the report's one deflate stream ends, so that it inflates alone (`Packer`).
_LAST_BLOCK = b"\x03\x00"


class Packer:
    """The chained data chunks of one report, in the order they go into the file (CHAIN_PACK_TYPE):
    each deflated with the JSON of the chained chunks before it as its dictionary. One per report
    file; its chunks must be written in the order they were made.

    The chunks are the parts of one raw deflate stream: each is the stream's blocks up to a sync
    flush (which ends them on a byte boundary), then an empty final block. Deflate reaches at most
    32 KB less 262 bytes back, into the chained chunks before it, so each inflates alone with their
    last 32 KB as its preset dictionary: what the readers (core.js, `chunk_bodies`) do. The same
    chunks as deflating each with that dictionary, without setting 32 KB of dictionary up per chunk
    (which cost most of the CPU: docs/benchmarks.md, "Issue 51, round 5"). A chained chunk therefore
    always goes packed (its JSON is in the stream's window from then on); a small one (PACK_MIN)
    goes plain, outside the chain.
    """

    def __init__(self, level: int = LEVEL) -> None:
        # At the smallest level each chunk is deflated on its own with the window as its preset
        # dictionary (what the readers do to inflate it), as before the one stream: a chunk then
        # ends in its final block, without the stream's sync flush (about 10 bytes of base64 a
        # chunk, which took a one-kernel report with PTX and SASS past 152 KB).
        self._level = level
        self._z = zlib.compressobj(level, zlib.DEFLATED, -15) if level != SMALLEST else None
        self._window = b""  # the chained chunks' JSON, its last _WINDOW bytes (SMALLEST only)

    def chunk(self, value: dict[str, Any] | list[dict[str, Any]], pieces: list[str] | None = None) -> bytes:
        body = _body(value, pieces)
        if len(body) < PACK_MIN:
            return _CHUNK_OPEN + body + _CHUNK_CLOSE
        z = self._z
        if z is None:
            w = self._window
            one = (
                zlib.compressobj(self._level, zlib.DEFLATED, -15, zdict=w)
                if w
                else zlib.compressobj(self._level, zlib.DEFLATED, -15)
            )
            packed_body = base64.b64encode(one.compress(body) + one.flush())
            self._window = (w + body)[-_WINDOW:]
        else:
            packed_body = base64.b64encode(z.compress(body) + z.flush(zlib.Z_SYNC_FLUSH) + _LAST_BLOCK)
        return _CHAINED_OPEN + packed_body + _CHUNK_CLOSE

    def batches(self, values: list[dict[str, Any]], size: int = BATCH_SIZE) -> list[bytes]:
        """Return `values` as chained chunks of consecutive batches of about `size` bytes of JSON each."""
        out: list[bytes] = []
        group: list[dict[str, Any]] = []
        pieces: list[str] = []  # each value's JSON, made once (its size, then the batch's array)
        held = 0
        for v in values:
            piece = script_json(v)
            if group and held + len(piece) > size:
                out.append(self.chunk(group, pieces))
                group, pieces, held = [], [], 0
            group.append(v)
            pieces.append(piece)
            held += len(piece)
        if group:
            out.append(self.chunk(group, pieces))
        return out


def chunk_bodies(page: bytes) -> list[bytes]:
    """Return the JSON of every data chunk of a page, in order, packed ones inflated (what core.js
    reads); b"" for one that does not inflate (cut short)."""
    out = []
    history: bytes | None = b""  # the chained chunks' JSON so far (None: the chain broke)
    for m in _ANY_CHUNK.finditer(page):
        kind, body = m.group(1).decode(), m.group(2)
        if kind in (DATA_PACK_TYPE, CHAIN_PACK_TYPE):
            zdict = history[-_WINDOW:] if kind == CHAIN_PACK_TYPE and history else b""
            try:
                if kind == CHAIN_PACK_TYPE and history is None:
                    raise ValueError("after a damaged chunk")
                z = zlib.decompressobj(-15, zdict=zdict) if zdict else zlib.decompressobj(-15)
                body = z.decompress(base64.b64decode(body, validate=True))
                if not z.eof:
                    raise ValueError("cut short")
            except (ValueError, zlib.error):
                body = b""
                if kind == CHAIN_PACK_TYPE:
                    history = None
            else:
                if kind == CHAIN_PACK_TYPE and history is not None:
                    history = (history + body)[-_WINDOW:]
        elif kind != "application/json":
            continue
        out.append(body)
    return out


def chunk_values(page: bytes) -> list[dict[str, Any] | None]:
    """Return every data chunk object of a page in order, batches opened and packed ones inflated
    (what core.js's readChunks reads); None for a damaged chunk."""
    out: list[dict[str, Any] | None] = []
    for body in chunk_bodies(page):
        try:
            v = json.loads(body)
        except ValueError:
            out.append(None)
            continue
        out.extend(v if isinstance(v, list) else [v])
    return out


def meta_of(
    manifest: RunManifest,
    run_dir: Path | None = None,
    fail_site: dict[str, Any] | None = None,
    layout_why: Sequence[str] = (),
) -> dict[str, Any]:
    """Return the run header the report shows (no records); O(1) in the number of records.

    With `run_dir` (where the compile's records are), the repro command the report copies
    names the trace dir as an absolute `--trace-dir` and the script directory's name, so
    that it works pasted anywhere, whatever --trace-dir the run had.
    """
    out: dict[str, Any] = {"t": "meta"}
    for name in _META_FIELDS:
        value = getattr(manifest, name, None)
        if value is not None and value != []:
            out[name] = list(value) if name == "command" else value
    if manifest.command:
        out["command_line"] = shlex.join(str(c) for c in manifest.command)
    if manifest.repro and manifest.run_id:
        # `tltrace repro` for a pass of this compile: the report appends the pass's index.
        where = [manifest.script]
        if run_dir is not None:
            script_dir = Path(run_dir).absolute().parent.parent
            where = ["--trace-dir", str(script_dir.parent), script_dir.name]
        out["repro"] = shlex.join(["tltrace", "repro", *where, manifest.run_id, "--pass"])
    values = manifest.facts.get("values") if isinstance(manifest.facts, dict) else None
    if isinstance(values, dict):  # the report's Facts strip (docs/facts.md), known values only
        out["facts"] = {k: v for k, v in values.items() if v is not None}
    out.update(_build_meta(manifest))
    if fail_site is not None:  # the error's "at k.py:N" button: the failing operation's line
        out["fail_site"] = fail_site
    if isinstance(manifest.layouts, dict):  # the Layouts view (layouts.js; docs/layouts.md)
        out["layouts"] = layouts_meta(manifest.layouts)
    if layout_why:  # why layout inference failed, once explained (layouts/explain.py)
        out["layout_why"] = list(layout_why)
    if manifest.invocation:
        # The compile's way back: the script's index (two levels up) and, once known, its siblings.
        out["index"] = "../../" + REPORT_NAME
    return out


def _build_meta(manifest: RunManifest) -> dict[str, Any]:
    """The backend build (format/build.py) as the report shows it: `build.edits` (report-edit.js draws
    the edit against the generated source) and, when the build failed, `build_error`: the error box's
    head, its first error at the working file's line, and its full text (the compiler's log first)."""
    from ..format import build as fb

    b = fb.of(manifest)
    out: dict[str, Any] = {}
    if fb.edits(b):
        out["build"] = {"edits": fb.edits(b)}
    if fb.failed(b) and not any(r.status == "failed" for r in manifest.records):
        errs = fb.errors(b)
        first = fb.at(errs[0]) if errs else (fb.error_lines(b) or [str(manifest.error or "")])[0]
        head = fb.headline(b)
        log = b.get("log") if isinstance(b, dict) and isinstance(b.get("log"), str) else ""
        out["build_error"] = {
            "head": head[0].upper() + head[1:] + ":",
            "first": first.split("\n")[0],
            "text": "\n\n".join(x for x in (log, str(manifest.error or "")) if x),
        }
    return out


def layouts_meta(layouts: dict[str, Any]) -> dict[str, Any]:
    """Return what the Layouts view draws: each buffer's final layout, and a failure's buffers."""
    from ..layouts import model

    out: dict[str, Any] = {"final": model.final(layouts)}
    failed = model.failure_of(layouts)
    if failed is not None:
        out["failed"] = failed
    return out


def record_value(record: PassRecord) -> dict[str, Any]:
    """Return a record's chunk object (`record_chunk`)."""
    data = record.to_json()
    # Paths on disk mean nothing inside the report; the hashes name the texts.
    data.pop("before_file", None)
    data.pop("after_file", None)
    data["t"] = "rec"
    return data


def record_chunk(record: PassRecord) -> bytes:
    return data_chunk(record_value(record))


def text_value(
    digest: str,
    text: str,
    base_hash: str | None = None,
    base: str | None = None,
    same: list[tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """Return a text's chunk object: whole, or (given its base, already in the report) as a delta (render/delta.py)."""
    if base_hash is None or base is None or same is None:
        return {"t": "text", "h": digest, "s": text}
    return {"t": "text", "h": digest, **text_fields(base_hash, base, text, same)}


def report_texts(chunks: list[dict[str, Any]]) -> dict[str, str]:
    """Return {hash: text} of a report's data chunks in order, deltas applied (what the page rebuilds)."""
    out: dict[str, str] = {}
    for c in chunks:
        if c.get("t") != "text" or not isinstance(c.get("h"), str):
            continue
        if isinstance(c.get("s"), str):
            out[c["h"]] = c["s"]
        elif isinstance(c.get("b"), str) and c["b"] in out and isinstance(c.get("d"), list):
            text = decode(out[c["b"]], c["d"], bool(c.get("e")))
            if text is not None:
                out[c["h"]] = text
    return out


def _sha256_b64(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def lazy_js(entry: str, head_entries: tuple[str, ...]) -> str:
    """Return the minified scripts `entry` needs beyond those of `head_entries` (a script a page
    carries after its data, only when its data needs it)."""
    have = set(script_order(head_entries))
    return "".join(minify_js(asset_text(n)) for n in script_order([entry]) if n not in have)


# Scripts a compile report carries only where its data needs them: each is its own <script>
# element among the data chunks (`late_script`: the script and what it requires beyond the
# head), allowed by its hash in the head's CSP, and registers itself on `window` for report.js
# to find at start (docs/report.md). The profile goes in when the compile has ended (a profile
# of a compile still running would be wrong); the Layouts view only in reports of compiles
# that have layouts; the PTX/SASS views only in reports with a stage record. The head every
# report starts with carries none of them.
LATE_SCRIPTS = ("profile.js", "layouts.js", "report-machine.js")

# The PTX and SASS views (tltrace run --ptx, --sass): appended once to a report that has a stage
# record, before it (its CSS, 640 bytes, is in the head).
STAGE_CSS, STAGE_JS = "report-machine.css", "report-machine.js"


def _late_js(name: str) -> str:
    if name not in LATE_SCRIPTS:
        raise KeyError(name)
    key = "late:" + name
    if key not in _HEAD_CACHE:
        js = lazy_js(name, ("report.js",))
        if re.search(r"</(script|style)|<!--", js, re.I):
            raise RuntimeError("report assets must not contain </script, </style or <!--")
        _HEAD_CACHE[key] = js.encode("utf-8")
    return _HEAD_CACHE[key].decode("utf-8")


def late_script(name: str) -> bytes:
    """Return one of LATE_SCRIPTS as the elements a report appends among its data chunks: the script
    packed (`packed`), and the call that unpacks and runs it (unpack.js, in the report's head)."""
    key = "pack:" + name
    if key not in _HEAD_CACHE:
        _HEAD_CACHE[key] = (packed(_late_js(name)) + f"<script>{UNPACK_CALL}</script>\n").encode("utf-8")
    return _HEAD_CACHE[key]


def stage_chunk() -> bytes:
    """Return the PTX/SASS views' `<script>`, for a report's first stage record (STAGE_ROLES)."""
    return late_script(STAGE_JS)


# The compile report's scripts travel packed (raw deflate, base64) in an element nothing runs;
# unpack.js, inline in the head, inflates each and inserts it as an inline script, which the CSP
# allows by the unpacked text's hash. A one-kernel report is about 45 KB smaller for it.
PACK_TYPE = "text/x-tltrace-z"
UNPACK_JS = "unpack.js"
UNPACK_CALL = "tlUnpack()"  # a late script's own call (unpack.js's window.tlUnpack)


def pack(js: str) -> str:
    """Return `js` deflated (raw, RFC 1951) and in base64: what unpack.js's `inflate` reads back."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    return base64.b64encode(z.compress(js.encode("utf-8")) + z.flush()).decode("ascii")


def packed(js: str) -> str:
    """Return the element that holds `js` packed (unpack.js unpacks the one before the calling script)."""
    return f'<script type="{PACK_TYPE}">{pack(js)}</script>'


def _page_head(
    template: str,
    css_names: tuple[str, ...],
    entries: tuple[str, ...],
    late: tuple[str, ...] = (),
    pack_js: bool = False,
) -> bytes:
    """Return a page's head: `template` with its CSS and the scripts `entries` start, in order (render/bundle.py).

    `late`: scripts not in the head that the page may carry later (`lazy_js`): their hashes join the CSP,
    packed (`late_script`) with the call that unpacks them. `pack_js`: the head's script goes packed,
    before unpack.js, which runs it at once.
    """
    # The skeleton's indentation goes: a line break alone separates as the blanks after it did
    # (the skeletons have no <pre> or <textarea>, where blanks would count).
    page = re.sub(r"\n[ \t]+", "\n", asset_text(template))
    css = "".join(minify_css(asset_text(n)) for n in css_names)
    js = "".join(minify_js(asset_text(n)) for n in script_order(entries))
    # The assets are ours; still, keep them from closing their own elements early.
    for text in (css, js):
        if re.search(r"</(script|style)|<!--", text, re.I):
            raise RuntimeError("report assets must not contain </script, </style or <!--")
    # The page runs only its own script: CSP names it by hash, so even markup smuggled into
    # the data (it cannot be: see safejson.script_json) could not run an inline handler.
    hashed = [js, *(lazy_js(n, entries) for n in late)]
    boot = minify_js(asset_text(UNPACK_JS)) if pack_js else ""
    if pack_js:
        hashed += [boot, UNPACK_CALL]
    csp = " ".join(f"'sha256-{_sha256_b64(t)}'" for t in hashed)
    page = page.replace("script-src 'unsafe-inline'", f"script-src {csp}", 1)
    page = page.replace("style-src 'unsafe-inline'", f"style-src 'sha256-{_sha256_b64(css)}'", 1)
    page = page.replace("/*TLTRACE_CSS*/", css, 1)
    if pack_js:
        if re.search(r"</(script|style)|<!--", boot, re.I):
            raise RuntimeError("report assets must not contain </script, </style or <!--")
        page = page.replace("<script>/*TLTRACE_JS*/</script>", packed(js) + f"<script>{boot}</script>", 1)
    return page.replace("/*TLTRACE_JS*/", js, 1).encode("utf-8")


def report_head() -> bytes:
    """Return a compile report's fixed head: skeleton, CSS and JS, ending where the data chunks start."""
    if "report" not in _HEAD_CACHE:
        # report.js starts the page; its @requires bring the rest (diff engine, views, source maps);
        # the profile and the Layouts view come with their data (LATE_SCRIPTS).
        _HEAD_CACHE["report"] = _page_head(
            REPORT,
            (
                "palette.css",
                "report.css",
                "profile.css",
                "sourcemap.css",
                "layouts.css",
                STAGE_CSS,
                "remarks.css",
            ),
            ("report.js",),
            LATE_SCRIPTS,
            pack_js=True,
        )
    return _HEAD_CACHE["report"]


def layouts_tag() -> bytes:
    """Return the Layouts view's script, to append after the data of a compile that has layouts."""
    return late_script("layouts.js")


def index_head() -> bytes:
    """Return the invocation index's fixed head (it shares report.css's palette)."""
    if "index" not in _HEAD_CACHE:
        _HEAD_CACHE["index"] = _page_head(
            "index.html",
            ("palette.css", "report.css", "index.css", "profile.css"),
            ("index.js",),
        )
    return _HEAD_CACHE["index"]
