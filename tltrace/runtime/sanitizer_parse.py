"""compute-sanitizer's report read as data: its XML (`--xml --save FILE`), or its text as a fallback,
as records; identical errors grouped with a count and the thread and block ranges.

The XML is read with the standard library's pull parser over bytes tltrace read itself: a
document with a DTD (`<!DOCTYPE`, `<!ENTITY`) is refused before any parsing, so no entity is
ever expanded or fetched (compute-sanitizer writes none). A report cut short (the process
killed while it wrote) or garbage after some records keeps the records read before the damage
and says where it stopped. Pure: no printing; the caller says `Report.problem` in one line.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ..fs import safe_read

LIMIT = 256 << 20  # bytes of a report read at most (a record is a few KB; the print limit keeps them few)
_CHUNK = 1 << 20
_LIBRARY_DIRS = {"site-packages", "dist-packages", "tilelang", "tvm", "torch", "tvm_ffi"}

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Record:
    """One error compute-sanitizer reported (one thread's, for a memory error)."""

    kind: str  # Precise, Api, ... (the XML's kind; the text form says "error")
    level: str  # Error, Warning
    text: str
    space: str | None = None  # __global__, __shared__, __local__
    direction: str | None = None  # read, write, atomic
    size: int | None = None
    error: str | None = None  # "out of bounds", "misaligned"
    address: str | None = None
    thread: Dim3 | None = None
    block: Dim3 | None = None
    func: str | None = None  # the kernel (CUDA's name: main_kernel)
    path: str | None = None  # the .cu TileLang compiled (a temporary file, gone after the run)
    line: int | None = None
    pc: int | None = None  # the instruction's offset in the kernel
    launch: tuple[str, int] | None = (
        None  # (path, line): the host stack's innermost Python frame outside the libraries
    )

    def key(self) -> tuple[Any, ...]:
        """What makes two records the same error: kernel, pc, and what happened."""
        what = (self.space, self.direction, self.size, self.error) if self.space else (self.text,)
        return (self.kind == "Api", self.func, self.pc, self.line, *what)


@dataclass(frozen=True)
class Group:
    """Identical errors (`Record.key`): the first one, how many, and the threads and blocks they came from."""

    first: Record
    count: int
    threads: tuple[Dim3, Dim3] | None  # (lowest, highest) of each coordinate
    blocks: tuple[Dim3, Dim3] | None
    n_blocks: int

    def what(self) -> str:
        """The error in words, plural when several: 'invalid __global__ writes of 4 bytes'."""
        r = self.first
        if r.space and r.direction and r.size is not None:
            s = "s" if self.count != 1 else ""
            return f"invalid {r.space} {r.direction}{s} of {r.size} byte{'s' if r.size != 1 else ''}"
        return r.text


@dataclass
class Report:
    """What a report file held: the records in order, and what stopped the read (None: read whole)."""

    records: list[Record] = field(default_factory=list)
    problem: str | None = None
    form: str = "xml"

    def groups(self) -> list[Group]:
        return group(self.records)


def _dim3(a: list[int], b: list[int]) -> tuple[Dim3, Dim3]:
    return (a[0], a[1], a[2]), (b[0], b[1], b[2])


def group(records: list[Record]) -> list[Group]:
    """Return the records grouped by `Record.key`, in the order each group first appears."""
    order: dict[tuple[Any, ...], list[Record]] = {}
    for r in records:
        order.setdefault(r.key(), []).append(r)
    out = []
    for rs in order.values():
        out.append(Group(rs[0], len(rs), _ranges([r.thread for r in rs]), _ranges([r.block for r in rs]),
                         len({r.block for r in rs if r.block is not None})))  # fmt: skip
    return out


def _ranges(dims: list[Dim3 | None]) -> tuple[Dim3, Dim3] | None:
    have = [d for d in dims if d is not None]
    if not have:
        return None
    return _dim3([min(d[i] for d in have) for i in range(3)], [max(d[i] for d in have) for i in range(3)])


def span(r: tuple[Dim3, Dim3] | None) -> str:
    """'(104..127,0,0)': each coordinate, or its range."""
    if r is None:
        return "?"
    lo, hi = r
    return "(" + ",".join(str(a) if a == b else f"{a}..{b}" for a, b in zip(lo, hi, strict=True)) + ")"


# The XML form.


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip().replace(",", ""), 0)
    except ValueError:
        return None


def _t(el: ET.Element | None, tag: str) -> str | None:
    if el is None:
        return None
    child = el.find(tag)
    return child.text.strip() if child is not None and child.text is not None else None


def _xyz(el: ET.Element | None) -> Dim3 | None:
    if el is None:
        return None
    v = [_int(_t(el, c)) for c in ("x", "y", "z")]
    return (v[0], v[1], v[2]) if all(x is not None for x in v) else None  # type: ignore[return-value]


def _library(path: str) -> bool:
    return bool(_LIBRARY_DIRS & set(path.replace("\\", "/").split("/")[:-1]))


def _launch(stack: ET.Element | None) -> tuple[str, int] | None:
    """The innermost Python frame (one with a path and a line) that is not in a library."""
    if stack is None:
        return None
    for fr in stack.findall("frame"):
        path, line = _t(fr, "path"), _int(_t(fr, "line"))
        if path and line is not None and not _library(path):
            return path, line
    return None


def record_of(el: ET.Element) -> Record:
    """Return one `<record>` element as a Record (fields it lacks are None)."""
    who, what, where = el.find("who"), el.find("what"), el.find("where")
    stack = next((s for s in el.findall("hostStack") if _t(s, "saveLocation") != "error"), None)
    return Record(
        kind=_t(el, "kind") or "?",
        level=_t(el, "level") or "?",
        text=(_t(what, "text") or "").rstrip("."),
        space=_t(what, "space"),
        direction=_t(what, "direction"),
        size=_int(_t(what, "size")),
        error=_t(what, "error"),
        address=_t(what, "address"),
        thread=_xyz(who.find("threadIdx") if who is not None else None),
        block=_xyz(who.find("blockIdx") if who is not None else None),
        func=_t(where, "func"),
        path=_t(where, "path"),
        line=_int(_t(where, "line")),
        pc=_int(_t(where, "pc")),
        launch=_launch(stack if stack is not None else el.find("hostStack")),
    )


def parse_xml(data: bytes) -> Report:
    """Return the records of compute-sanitizer's XML; a damaged document keeps the records before the damage."""
    rep = Report(form="xml")
    if not data.strip():
        rep.problem = "the report is empty"
        return rep
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        rep.problem = "the XML declares a DTD or entities (compute-sanitizer writes none): not read"
        return rep
    parser: ET.XMLPullParser = ET.XMLPullParser(events=("start", "end"))
    depth = 0
    try:
        for i in range(0, len(data), _CHUNK):
            parser.feed(data[i : i + _CHUNK])
            depth = _drain(parser, rep, depth)
        parser.close()
        _drain(parser, rep, depth)
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else "?"
        kept = f"; the {len(rep.records)} records before it kept" if rep.records else ""
        rep.problem = f"the XML is cut short or damaged at line {line}{kept}"
        return rep
    return rep


def _drain(parser: ET.XMLPullParser, rep: Report, depth: int) -> int:
    for item in parser.read_events():
        event, el = cast(tuple[str, Any], item)
        if event == "start":
            depth += 1
            continue
        depth -= 1
        if isinstance(el, ET.Element) and el.tag == "record" and depth == 1:
            rep.records.append(record_of(el))
            el.clear()
    return depth


# The text form (compute-sanitizer's terminal output), a fallback.

_HEAD = re.compile(r"^=========\s(\S.*)$")
_CONT = re.compile(r"^=========\s{2,}(\S.*)$")
_AT = re.compile(r"^at (?P<func>\S+?)\+(?P<pc>0x[0-9a-fA-F]+)(?: in (?P<path>.+?):(?P<line>\d+))?$")
_BY = re.compile(r"^by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
_INVALID = re.compile(r"^Invalid (\S+) (read|write|atomic) of size (\d+) bytes?")
_ACCESS = re.compile(r"^(?:Access to|Address) (0x[0-9a-fA-F]+) is (.+?)\.?$")
_PYFRAME = re.compile(r"^Host Frame: (\S+) in (.+):(\d+)$")
_NOT_ERRORS = (
    "COMPUTE-SANITIZER",
    "ERROR SUMMARY",
    "Target application",
    "Error: process didn't",
    "LEAK SUMMARY",
)


def parse_text(text: str) -> Report:
    """Return the records of compute-sanitizer's text output (lines that do not start '=========' are the program's)."""
    rep = Report(form="text")
    cur: dict[str, Any] | None = None
    for raw in text.splitlines():
        cont = _CONT.match(raw)
        if cont and cur is not None:
            _more(cur, cont.group(1).strip())
            continue
        head = _HEAD.match(raw)
        if head is None:
            continue
        if cur is not None:
            rep.records.append(_done(cur))
            cur = None
        msg = head.group(1).strip()
        if not msg.startswith(_NOT_ERRORS):
            cur = {"text": msg.rstrip("."), "kind": "Api" if msg.startswith("Program hit") else "Precise"}
            m = _INVALID.match(msg)
            if m:
                cur.update(space=m.group(1), direction=m.group(2), size=int(m.group(3)))
    if cur is not None:
        rep.records.append(_done(cur))
    return rep


def _more(cur: dict[str, Any], line: str) -> None:
    if (m := _AT.match(line)) and "func" not in cur:
        cur.update(func=m["func"], pc=int(m["pc"], 16), path=m["path"], line=_int(m["line"]))
    elif m := _BY.match(line):
        g = [int(x) for x in m.groups()]
        cur.update(thread=(g[0], g[1], g[2]), block=(g[3], g[4], g[5]))
    elif m := _ACCESS.match(line):
        cur.update(address=m.group(1), error=m.group(2))
    elif m := _PYFRAME.match(line):  # the text names files, not paths: the outermost Python frame is kept
        cur["launch"] = (m.group(2), int(m.group(3)))


def _done(cur: dict[str, Any]) -> Record:
    return Record(level="Error", **cur)


def parse_bytes(data: bytes) -> Report:
    """Return the report of `data`: XML when it starts as XML, else the text form."""
    head = data.lstrip()[:64]
    if not head:
        return Report(problem="the report is empty")
    if head.startswith(b"<?xml") or head.startswith(b"<ComputeSanitizerOutput"):
        return parse_xml(data)
    rep = parse_text(data.decode("utf-8", "replace"))
    if not rep.records and data.strip() and b"=========" not in data:
        rep.problem = "neither compute-sanitizer's XML nor its text output"
    return rep


def read_report(path: Path) -> Report:
    """Return the report in the file at `path`; a missing, special or unreadable file is a Report with its problem."""
    try:
        data = safe_read.read_bytes(path, LIMIT + 1)
    except OSError as exc:
        return Report(problem=f"cannot read {path} ({exc.strerror or exc})")
    if len(data) > LIMIT:
        rep = parse_bytes(data[:LIMIT])
        return replace(rep, problem=rep.problem or f"only the first {LIMIT >> 20} MiB read")
    return parse_bytes(data)
