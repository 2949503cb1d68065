"""Why layout inference failed: the smallest set of tile operations whose layouts cannot agree.

When a compile fails in a layout pass (`LayoutInference`), the reproducer capture
(rerun/capture.py) saved that pass's input. The explanation reruns the one pass on it in
a child process (`_explain_child.py`, under a deadline, in a process group of its own:
proc/group.py) with tile operations taken out, delta-debugging (bisect/ddmin.py) down to a
1-minimal failing set: taking any one of its operations out lets the pass succeed or fail
otherwise. Each operation is also tried alone. The operations are named by their Python
lines through the run's source map (history/sourcemaps.py); an operation whose IR line
points into TileLang's own code (a `T.reduce_sum` does) or is only inferred from its
enclosing statement is found in the kernel's source by its name, between its neighbours.
A conflict's message (`Layout infer conflict between C_l and D_l`, `Get different layout
for C_l`) carries both layouts: conflict.py parses them into layout entries (layouts/model.py
draws them).

Derived data, computed when asked (`show`, the end of `tltrace run`) and cached beside the
run as `layout_explain.json`; the user's compile is never delayed by it. Data only; cli/
prints it.
"""

from __future__ import annotations

import ast
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from ..format.explained import CACHE as CACHE
from ..format.explained import SCHEMA as SCHEMA
from ..format.explained import cached as cached
from ..format.records import FAILED, PassRecord, RunManifest
from ..fs import safe_read
from ..fs.atomic import atomic_write
from ..proc import group as procgroup
from ..proc import pychild
from .conflict import parse_conflict

LAYOUT_PASSES = frozenset({"LayoutInference"})
TIMEOUT_ENV = "TLTRACE_EXPLAIN_TIMEOUT"
DEFAULT_TIMEOUT_S = 120.0


def timeout_s() -> float:
    """Return the explanation's deadline in seconds outside a run (`show`): TLTRACE_EXPLAIN_TIMEOUT
    (Settings.explain_timeout, read by config), else 120; 0 turns it off. A bad value: UsageError."""
    from ..config import knob_value

    return float(knob_value("explain_timeout", DEFAULT_TIMEOUT_S))


def failed_layout_record(manifest: RunManifest) -> PassRecord | None:
    """Return the failed record of a layout pass (LayoutInference), or None."""
    for r in manifest.records:
        if r.status == FAILED and r.name.split("@", 1)[0] in LAYOUT_PASSES:
            return r
    return None


def explain(run: Any, *, timeout: float | None = None, compute: bool = True) -> dict[str, Any] | None:
    """Return the explanation of a run that failed in a layout pass (cached, else computed in a child
    when `compute`); None for any other run, or when it is not cached and not computed."""
    manifest: RunManifest | None = run.manifest
    if manifest is None:
        return None
    rec = failed_layout_record(manifest)
    if rec is None:
        return None
    have = cached(run.path)
    if have is not None or not compute:
        return have
    limit = timeout_s() if timeout is None else timeout
    if limit <= 0:
        return None
    raw = _run_child(run.path, manifest, rec, limit)
    data = build(run, rec, raw)
    if data.get("complete"):
        try:
            atomic_write(Path(run.path) / CACHE, json.dumps(data, indent=1).encode())
        except OSError:
            pass
    return data


def inputs_of(run_dir: Path, manifest: RunManifest, rec: PassRecord) -> tuple[Path, Path] | None:
    """Return the failed pass's saved input and the compile's context file, or None when the run kept none."""
    from ..history.runs import record_path

    info = manifest.repro or {}
    inp = record_path(run_dir, ((info.get("inputs") or {}).get(str(rec.index))))
    ctx_path = record_path(run_dir, info.get("context"))
    if inp is None or not inp.is_file() or ctx_path is None or not ctx_path.is_file():
        return None
    return inp, ctx_path


def _run_child(run_dir: Path, manifest: RunManifest, rec: PassRecord, limit: float) -> dict[str, Any]:
    """Return the child's answer, or {"stopped": why} when there is none."""
    from ..rerun import trust

    files = inputs_of(run_dir, manifest, rec)
    if files is None:
        return {"stopped": "the run kept no input of the failed pass (no reproducer data)"}
    inp, ctx_path = files
    try:
        ctx = json.loads(safe_read.read_text(ctx_path))
        spec = ctx.get("target") or ctx.get("bound_target")
        target = trust.check_target(spec, "context.json")
        config, _dropped = trust.filter_config(ctx.get("config") or {})
    except Exception as exc:  # a damaged or refused context: no rerun
        return {"stopped": f"the recorded context cannot be rerun ({exc})"}
    child_ctx = {"target": target, "opt_level": int(ctx.get("opt_level", 2)), "config": config}
    name = rec.name.split("@", 1)[0]
    registered = name if "." in name else f"tl.{name}"
    with tempfile.TemporaryDirectory(prefix="tltrace-explain-") as tmp:
        cpath = Path(tmp) / "context.json"
        cpath.write_text(json.dumps(child_ctx))
        argv = pychild.tltrace_code(
            "tltrace.layouts._explain_child", str(inp), str(cpath), registered, f"{limit:g}"
        )
        started = time.monotonic()
        answer: dict[str, Any] = {}
        for _attempt in range(2):  # a child that died at start (a busy machine) is tried once more
            try:
                proc = procgroup.run(argv, capture_output=True, text=True, timeout=limit + 30)
            except Exception as exc:  # TimeoutExpired, OSError: no explanation, the records are unharmed
                return {"stopped": f"the rerun did not answer ({type(exc).__name__})"}
            for line in reversed(proc.stdout.splitlines()):
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if isinstance(data, dict):
                    return data
            tail = (proc.stderr or "").strip().splitlines()
            answer = {
                "stopped": f"the rerun gave no answer (exit {proc.returncode}): {tail[-1] if tail else ''}".strip()
            }
            if time.monotonic() - started > limit / 2:
                break
    return answer


def build(run: Any, rec: PassRecord, raw: dict[str, Any]) -> dict[str, Any]:
    """Return the explanation as data: the child's answer with each operation's Python line, the
    conflict's layouts, and the sentences every view prints."""
    ops = [dict(o) for o in raw.get("ops") or [] if isinstance(o, dict)]
    _python_lines(run, rec, ops)
    minimal = [i for i in raw.get("minimal") or [] if isinstance(i, int) and 0 <= i < len(ops)]
    alone: dict[str, Any] = raw["alone"] if isinstance(raw.get("alone"), dict) else {}
    for i, op in enumerate(ops):
        op["in_minimal"] = i in minimal
        op["alone_error"] = alone.get(str(i)) if str(i) in alone else None
        op["alone_tried"] = str(i) in alone
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "pass": rec.name,
        "record": rec.index,
        "error": raw.get("error"),
        "threads": raw.get("threads"),
        "ops": ops,
        "minimal": minimal,
        "minimal_error": raw.get("minimal_error"),
        "minimal_complete": bool(raw.get("minimal_complete")),
        "complete": bool(raw.get("complete")),
        "stopped": raw.get("stopped"),
        "tests": raw.get("tests"),
        "seconds": raw.get("seconds"),
        "conflict": parse_conflict(raw.get("message") or ""),
        "tilelang_log": [str(x) for x in raw.get("tilelang_log") or []][:200],
    }
    data["lines"] = sentences(data)
    return data


# -- Python lines ------------------------------------------------------------------------------
def _python_lines(run: Any, rec: PassRecord, ops: list[dict[str, Any]]) -> None:
    """Set each op's `file` and `line` (and `line_from`: "source map" or "source"), in place."""
    from ..history import sourcemaps

    try:
        maps = sourcemaps.load(run.path)
        rows = sourcemaps.annotated(run, rec, "before", maps) if maps else []
        kernel = sourcemaps.kernel_file(maps) if maps else None
    except Exception:
        rows, kernel, maps = [], None, None
    for op in ops:
        op["file"] = op["line"] = op["line_from"] = None
        k = op.get("text_line")
        src = rows[k - 1]["src"] if isinstance(k, int) and 0 < k <= len(rows) else None
        if src and not src.get("inferred") and not src.get("via"):
            op.update(file=src["file"], line=src["line"], line_from="source map")
    source = maps.sources.get(kernel) if maps is not None and kernel else None
    if source is None:
        return
    calls = _calls(source)
    for i, op in enumerate(ops):
        if op["line"] is not None:
            continue
        lo = max((o["line"] for o in ops[:i] if o["line"] is not None and o["file"] == kernel), default=0)
        hi = min(
            (o["line"] for o in ops[i + 1 :] if o["line"] is not None and o["file"] == kernel),
            default=1 << 30,
        )
        want = _call_name(op)
        hits = [ln for name, ln in calls if name == want and lo < ln < hi]
        if len(hits) == 1:
            op.update(file=kernel, line=hits[0], line_from="source")


def _call_name(op: dict[str, Any]) -> str:
    """Return the attribute the kernel's source calls for an op: `T.reduce_sum` -> reduce_sum."""
    return str(op.get("name") or "").rsplit(".", 1)[-1]


def _calls(source: str) -> list[tuple[str, int]]:
    """Return (attribute name, line) of every `X.name(...)` call in a Python source (empty when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            out.append((node.func.attr, node.lineno))
    return sorted(out, key=lambda p: p[1])


_ORPHAN = re.compile(r"The layout for fragment (\S+?) can not be inferred")


# -- words -------------------------------------------------------------------------------------
def _buf_words(op: dict[str, Any]) -> str:
    local = [b for b in op.get("buffers") or [] if str(b.get("scope", "")).startswith("local")]
    bufs = local or op.get("buffers") or []
    return ", ".join(f"`{b['name']}` {tuple(b['shape'])}" for b in bufs)


def op_words(op: dict[str, Any]) -> str:
    """Return "`T.copy` at line 11" (or "at file.py:11" outside the kernel file; "at IR line 22" without one)."""
    if op.get("line") is not None:
        where = f"line {op['line']}"
    elif op.get("text_line") is not None:
        where = f"IR line {op['text_line']}"
    else:
        where = "an unknown line"
    return f"`{op.get('name')}` at {where}"


def sentences(data: dict[str, Any]) -> list[str]:
    """Return the explanation in a kernel author's words: the headline first, then one line per finding."""
    ops = data["ops"]
    threads = data.get("threads")
    with_threads = f" with {threads} threads" if threads else ""
    if data.get("error") is None and data.get("ops") is not None and data.get("complete"):
        return [f"{data['pass']} did not fail when rerun on its recorded input: no explanation"]
    minimal = [ops[i] for i in data["minimal"]]
    if not minimal:
        why = data.get("stopped") or "no tile operation to take out"
        return [f"{data['pass']} failed; no explanation ({why})"]
    if len(minimal) == 1:
        op = minimal[0]
        head = f"{op_words(op)} over {_buf_words(op)}{with_threads} has no layout"
    else:
        shared = _fragments(minimal)
        over = f" over {shared}" if shared else ""
        named = [op_words(o) for o in minimal]
        head = ", ".join(named[:-1]) + f" and {named[-1]}{over}{with_threads} cannot agree on a layout"
    alone_ok = [o for o in ops if o.get("alone_tried") and o.get("alone_error") is None]
    parts: list[str] = []
    each = len(minimal) > 1 and all(o in alone_ok for o in minimal)
    if each:
        parts.append("each alone has one")
    for o in ops:
        if not o.get("alone_tried") or (each and o in minimal) or (len(minimal) == 1 and o in minimal):
            continue
        if o in alone_ok:
            parts.append(f"{op_words(o)} alone has one")
        elif o in minimal:
            left = _ORPHAN.search(str(o.get("alone_error")))
            parts.append(
                f"{op_words(o)} alone leaves `{left.group(1)}` without one"
                if left
                else f"{op_words(o)} alone fails: {o.get('alone_error')}"
            )
    if parts:
        head += "; " + "; ".join(parts)
    if not data.get("minimal_complete"):
        head += " (not minimal: the search stopped early)"
    lines = [head]
    if data.get("minimal_error") and data.get("minimal_error") != data.get("error"):
        them = "that operation" if len(minimal) == 1 else "those operations"
        lines.append(f"with only {them} the pass fails with: {data['minimal_error']}")
    conflict = data.get("conflict")
    if conflict:
        lines.append(
            "conflict between "
            + " and ".join(f"`{b}`" for b in conflict["buffers"])
            + (f" in {conflict['where']}" if conflict.get("where") else "")
            + f": {len(conflict['layouts'])} layouts in the message (show --layouts draws them side by side)"
        )
    if data.get("tilelang_log"):
        lines.append(
            f"TileLang printed {len(data['tilelang_log'])} lines while the pass ran on the whole input "
            "(a debug build's per-root reasons): show --json, tilelang_log"
        )
    if data.get("stopped"):
        lines.append(f"stopped: {data['stopped']}")
    return lines


def _fragments(ops: list[dict[str, Any]]) -> str:
    """Return the local (fragment) buffers the ops touch, each once: "`C_l` (64, 64), `D_l` (64, 64)"."""
    names: list[str] = []
    for o in ops:
        for b in o.get("buffers") or []:
            w = f"`{b['name']}` {tuple(b['shape'])}"
            if str(b.get("scope", "")).startswith("local") and w not in names:
                names.append(w)
    return ", ".join(names)
