"""An invocation's launches read back (`show --launches`, `diff-runs`): each joined to its compile.

The log (format/launches.py) says, per kernel object, the hash of its generated source; the
compile is the selected run whose codegen record has that hash as its output (else the one
compile of that kernel's name). Grid, block and dynamic shared memory come from the compile's
launch shape (the manifest's `launch`, read from its IR): a grid that names symbolic sizes is
evaluated with them bound from the launch's own arguments (the tensor of each parameter, in
the kernel's parameter order without the outputs its adapter allocates), else it stays
"dynamic". Two launches compared give what differs between them (`compare`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RecordsError, UsageError
from ..format import launches as log_format
from ..format.records import CODEGEN
from .loading import Run

DYNAMIC = "dynamic"
MAX_EXPR = 1000  # characters of a grid expression evaluated
_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__}


@dataclass(frozen=True)
class Launch:
    """One launch as read: numbered 1.. in time order over the invocation."""

    number: int
    t_ms: float  # since the invocation's first recorded launch
    pid: int
    kernel: str
    run_id: str | None  # the compile it came from; None: no selected compile has its source
    site: tuple[str, int, str] | None  # file, line, function of the calling Python line
    args: tuple[dict[str, Any], ...]
    grid: tuple[int | str, ...] | None
    block: tuple[int | str, ...] | None
    shared_bytes: int | None
    t_ns: int = 0  # the log's monotonic time: how run --save-inputs' index names the launch

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "t_ms": round(self.t_ms, 6),
            "pid": self.pid,
            "kernel": self.kernel,
            "run_id": self.run_id,
            "site": {"file": self.site[0], "line": self.site[1], "function": self.site[2]}
            if self.site
            else None,
            "grid": list(self.grid) if self.grid is not None else None,
            "block": list(self.block) if self.block is not None else None,
            "shared_bytes": self.shared_bytes,
            "args": [dict(a) for a in self.args],
        }


@dataclass(frozen=True)
class Launches:
    """The launches of one invocation (those of the selected compiles), and what the log lost."""

    invocation: str
    path: Path
    launches: tuple[Launch, ...]
    dropped: int  # launches past --launch-limit, counted only
    cut: int  # bytes of a torn last line
    damaged: int  # lines that did not read
    ended: bool  # a writing process wrote its end line (else it was killed, or still runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "invocation": self.invocation,
            "log": str(self.path),
            "launches": [x.to_json() for x in self.launches],
            "dropped": self.dropped,
            "torn_bytes": self.cut,
            "damaged_lines": self.damaged,
            "ended": self.ended,
        }

    def get(self, number: int) -> Launch:
        """Return launch `number` (1-based); UsageError naming the range when there is none."""
        for x in self.launches:
            if x.number == number:
                return x
        raise UsageError(
            f"no launch {number} here: the launches shown are numbered 1 to {len(self.launches)}"
        )


def read_launches(
    script_dir: Path,
    invocation: str,
    runs: tuple[Run, ...],
    narrowed: bool,
    among: tuple[Run, ...] | None = None,
) -> Launches:
    """Return the invocation's launches; with `narrowed` (a compile or --kernel named) only the runs'.

    `among`: every compile of the invocation (default `runs`): each launch is joined to its compile
    among them, so that a kernel of another compile with the same name is not taken for one of
    `runs` (the join by name alone is for a kernel whose generated source no compile has).
    RecordsError (exit 3) when the invocation has no launch log: it was not run with --launches.
    """
    path = log_format.path_of(script_dir, invocation)
    try:
        log = log_format.read(path)
    except FileNotFoundError:
        raise RecordsError(
            f"invocation {invocation} recorded no launches; run the script with 'tltrace run --launches'"
        ) from None
    except OSError as exc:  # NotAFile: a link, a FIFO
        raise RecordsError(f"cannot read {path}: {exc}") from None
    owners = _owners(log, among if among is not None else runs)
    chosen = {r.run_id for r in runs}
    shapes = {r.run_id: (r.manifest.launch or {}) for r in runs if r.manifest is not None}
    t0 = min((x["t"] for x in log.launches), default=0)
    out: list[Launch] = []
    for raw in sorted(log.launches, key=lambda x: x["t"]):
        kernel = log.kernels.get((raw["pid"], raw["launch"])) or {}
        run_id = owners.get((raw["pid"], raw["launch"]))
        if narrowed and run_id not in chosen:
            continue
        if run_id not in chosen:
            run_id = None  # another compile's, not selected: listed as no selected compile's
        args = tuple(a for a in raw.get("args") or () if isinstance(a, dict))
        shape = shapes.get(run_id or "", {})
        grid = block = None
        if shape:
            params = _inputs(shape.get("buffers") or [], kernel.get("out_idx") or [])
            args = (
                tuple(
                    {"param": p["name"], **a} if isinstance(p.get("name"), str) and "name" not in a else a
                    for p, a in zip(params, args)
                )
                + args[len(params) :]
            )
            env = _bindings(params, args)
            grid = _dims(shape.get("grid"), env)
            block = _dims(shape.get("threads"), env)
        site = raw.get("site")
        out.append(
            Launch(
                number=len(out) + 1,
                t_ms=(raw["t"] - t0) / 1e6,
                pid=raw["pid"],
                kernel=str(kernel.get("name") or "?"),
                run_id=run_id,
                site=(str(site[0]), int(site[1]), str(site[2]))
                if isinstance(site, list) and len(site) == 3
                else None,
                args=args,
                grid=grid,
                block=block,
                shared_bytes=shape.get("shared_bytes") if shape else None,
                t_ns=int(raw["t"]),
            )
        )
    return Launches(invocation, path, tuple(out), log.dropped, log.cut, log.damaged, bool(log.ends))


def _owners(log: log_format.LaunchLog, runs: tuple[Run, ...]) -> dict[tuple[int, int], str]:
    """Return {(pid, kernel number): run id}: by the generated source's hash, else by a name one run has."""
    by_hash: dict[str, str] = {}
    by_name: dict[str, list[str]] = {}
    for run in runs:
        m = run.manifest
        if m is None:
            continue
        by_name.setdefault(str(m.kernel_name), []).append(run.run_id)
        for rec in m.records:
            if rec.status == CODEGEN and rec.after_hash:
                by_hash.setdefault(rec.after_hash, run.run_id)
    out: dict[tuple[int, int], str] = {}
    for key, k in log.kernels.items():
        run_id = by_hash.get(str(k.get("source")))
        named = by_name.get(str(k.get("name")), [])
        if run_id is None and len(named) == 1:
            run_id = named[0]
        if run_id is not None:
            out[key] = run_id
    return out


def _inputs(buffers: list[Any], out_idx: list[Any]) -> list[dict[str, Any]]:
    """Return the parameters a caller passes: the kernel's, less the outputs its adapter allocates."""
    n = len(buffers)
    outs = {i % n for i in out_idx if isinstance(i, int) and n}
    return [b for i, b in enumerate(buffers) if i not in outs and isinstance(b, dict)]


def _bindings(params: list[dict[str, Any]], args: tuple[dict[str, Any], ...]) -> dict[str, int]:
    """Return {symbolic size: value}: each parameter's symbolic dims bound from the argument passed for it."""
    env: dict[str, int] = {}
    for buf, arg in zip(params, args):
        dims = buf.get("shape") or []
        shape = arg.get("shape")
        if isinstance(shape, list) and len(shape) == len(dims):
            for d, v in zip(dims, shape):
                if isinstance(d, str) and d.isidentifier() and isinstance(v, int):
                    env.setdefault(d, v)
        elif not dims and isinstance(arg.get("value"), int) and str(buf.get("name", "")).isidentifier():
            env.setdefault(str(buf["name"]), arg["value"])  # a scalar parameter
    return env


def _dims(dims: Any, env: dict[str, int]) -> tuple[int | str, ...] | None:
    if not isinstance(dims, list):
        return None
    return tuple(d if isinstance(d, int) else evaluate(str(d), env) for d in dims)


def evaluate(text: str, env: dict[str, int]) -> int | str:
    """Return an extent's value with `env`'s sizes bound, or "dynamic" (a name unbound, anything but
    + - * // % on whole numbers, a division by zero, a text over MAX_EXPR characters)."""
    if len(text) > MAX_EXPR:
        return DYNAMIC
    try:
        return _eval(ast.parse(text, mode="eval").body, env)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, KeyError):
        return DYNAMIC


def _eval(node: ast.AST, env: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.FloorDiv):
            return a // b
        if isinstance(node.op, ast.Mod):
            return a % b
        op = _OPS.get(type(node.op))
        if op is not None:
            return op(a, b)
    raise ValueError("not an extent")


# -- two launches compared ----------------------------------------------------------------------
ARG_FIELDS = ("shape", "dtype", "strides", "device", "type", "value")


def compare(a: Launch, b: Launch) -> list[tuple[str, Any, Any]]:
    """Return (what, a's, b's) for each thing that differs between two launches (empty: the same)."""
    out: list[tuple[str, Any, Any]] = []
    pairs: tuple[tuple[str, Any, Any], ...] = (
        ("kernel", a.kernel, b.kernel),
        ("compile", a.run_id, b.run_id),
        ("grid", a.grid, b.grid),
        ("block", a.block, b.block),
        ("shared_bytes", a.shared_bytes, b.shared_bytes),
        ("arguments", len(a.args), len(b.args)),
    )
    out.extend(p for p in pairs if p[1] != p[2])
    for i, (one, two) in enumerate(zip(a.args, b.args)):
        name = one.get("name") or one.get("param") or f"arg {i}"
        out.extend((f"{name} {f}", one.get(f), two.get(f)) for f in ARG_FIELDS if one.get(f) != two.get(f))
    return out


def counts_by_kernel(launches: Launches) -> dict[str, int]:
    """Return {kernel name: launches recorded}, in the order each first launched."""
    out: dict[str, int] = {}
    for x in launches.launches:
        out[x.kernel] = out.get(x.kernel, 0) + 1
    return out
