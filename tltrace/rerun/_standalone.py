"""Rerun one TileLang pass, or a whole compile, from files saved by tltrace. Needs TileLang only.

This file is copied as `repro.py` into a directory made by `tltrace repro`; the
files beside it say what to run:

    repro.json      which pass (name, position in the compile), how to build its input,
                    what the recording saw (the output text, or the error)
    context.json    target, PassContext opt level and config, versions (as recorded)
    frontend.json   the compile's input IR (tvm.ir.save_json), for the replay path
    input.json      the pass's input IR (tvm.ir.save_json), for the json path
    before.tir / after.tir   the pass's input and output text as recorded

    python repro.py              rerun the pass (in a child process) and compare
    python repro.py --replay     build the input by replaying the compile up to the pass
    python repro.py --json       load the input from input.json
    python repro.py --in-process rerun it in this process, not a child: for a debugger
                                 (`python -m pdb repro.py --in-process`, breakpoints)
    python repro.py --pdb        --in-process, and pdb's post-mortem where the pass raises

Exit status: 0 and `reproduced` when the output is the recorded one (or a failed
pass raises the recorded error again); 1 with a diff or the new error otherwise;
2 for bad usage, missing files, or a Python that cannot import TileLang (`python -I`
ignores PYTHONPATH: where TileLang is found through it, run without -I); 5 when the
recorded IR does not load on this TileLang (it uses an operator or node type this
release does not have: one line names it and both releases), or when the replayed
compile does not reach the recorded pass at its position (another pass there, fewer
passes, or the compile fails before it: one line says which, and both releases).

What it applies is what tltrace wrote here: context.json holds the PassContext config
the rerun gets (without `tltrace repro --build`, only the configs known to be data;
repro.json's `not_applied` names the others, and the output says so), and the device
compile (nvcc, NVRTC) runs only when repro.json says `"build": true`. The child
starts without this directory or the cwd on sys.path: a `tilelang.py` here is never
imported. Names and texts are printed with control characters made visible (`cat -v`).

Two paths, said in the output: `json` loads input.json, makes the pass by its
registered name and runs it alone; `replay` loads frontend.json, compiles it with
the recorded target and config, lets the compile run the pass on the input it
rebuilt, and stops right after it. Passes whose input does not survive JSON
(layouts of tl.LowerTileOp, say) use the replay path.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = "result.json"
EXIT_UNLOADABLE = 5  # the recorded IR uses what this TileLang does not have (tltrace's exit code too)
MAX_DIFF_LINES = 200
POST_MORTEM: list[bool] = []  # --pdb: [True] while the pass reruns in this process


# -- shared by the parent and the child -------------------------------------------------------
def _visible_table(one_line: bool = False) -> dict[int, str]:
    """The `cat -v` spelling of control characters (tltrace/render/visible.py's table; a test keeps them equal)."""
    keep = "" if one_line else "\t\n"
    table = {c: "^" + chr(c + 64) for c in range(0x20) if chr(c) not in keep}
    table[0x7F] = "^?"
    table.update({c: "M-^" + chr(c - 0x80 + 64) for c in range(0x80, 0xA0)})
    table.update({0x2028: "<U+2028>", 0x2029: "<U+2029>"})
    return table


_VISIBLE = _visible_table()
_VISIBLE_NAME = _visible_table(True)


def visible(text: object, one_line: bool = False) -> str:
    """Return `text` with each control character spelt as `cat -v` does (ESC: ^[); with `one_line`
    (a name) tab and newline too."""
    return str(text).translate(_VISIBLE_NAME if one_line else _VISIBLE)


def say(text: object = "", err: bool = False) -> None:
    """Print one line of data: control characters made visible, never sent to the terminal."""
    print(visible(text), file=sys.stderr if err else sys.stdout)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def display_name(name: str) -> str:
    """The pass name as tltrace shows it: TileLang's `tl.` namespace dropped; `@function` dropped."""
    name = str(name).split("@", 1)[0]
    for prefix in ("tl.transform.", "tl."):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


_ERROR_HEAD = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Warning): ")


def error_text(error: BaseException) -> str:
    """Return "ExcType: message" as tltrace records it (a C++ backtrace before the message dropped)."""
    name = type(error).__name__
    msg = str(error).strip()
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    if lines and lines[0].startswith("Traceback"):
        tail = [i for i, ln in enumerate(lines) if _ERROR_HEAD.match(ln)]
        msg = "\n".join(lines[tail[-1] :]) if tail else lines[-1]
    if not msg:
        return name
    return msg if msg.startswith(f"{name}:") else f"{name}: {msg}"


def same_error(got: str, recorded: str) -> bool:
    """The same error: the same text, or the same first line (type and message)."""
    if got.strip() == recorded.strip():
        return True
    first = [t.strip().splitlines()[0] if t.strip() else "" for t in (got, recorded)]
    return bool(first[0]) and first[0] == first[1]


# -- the child: TileLang is imported here only --------------------------------------------------
def unplain(value: Any) -> Any:
    """Return a config value read from context.json as TVM takes it."""
    if isinstance(value, dict) and set(value) == {"tvm_json"}:
        from tilelang import tvm  # type: ignore[import-not-found]

        return tvm.ir.load_json(value["tvm_json"])
    if isinstance(value, dict):
        return {k: unplain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unplain(v) for v in value]
    return value


class Context:
    """The recorded PassContext and target, rebuilt."""

    def __init__(self, data: dict[str, Any]) -> None:
        from tilelang import tvm  # type: ignore[import-not-found]

        self.data = data
        self.tvm = tvm
        spec = data.get("target")
        self.target = tvm.target.Target(spec) if spec else None  # the compile ran inside `with target`
        bound = spec or data.get("bound_target")
        self.compile_target = tvm.target.Target(bound) if bound else None

    def pass_context(self, instruments: list | None = None) -> Any:
        d = self.data
        return self.tvm.transform.PassContext(
            opt_level=int(d.get("opt_level", 2)),
            config=unplain(d.get("config") or {}),
            required_pass=list(d.get("required_pass") or []),
            disabled_pass=list(d.get("disabled_pass") or []),
            instruments=instruments,
        )

    def target_scope(self) -> Any:
        return self.target if self.target is not None else contextlib.nullcontext()


def compile_from(
    frontend: str,
    context: Context,
    backend: str | None,
    kernel: str | None,
    flags: dict[str, Any],
    instruments: list | None = None,
) -> Any:
    """Compile the saved frontend IR as the recording did (lowering and codegen; no build of a binary
    unless the recording's backend compiled device code during codegen); return TileLang's artifact."""
    from tilelang import tvm  # type: ignore[import-not-found]
    from tilelang.backend.module import create_backend_context  # type: ignore[import-not-found]
    from tilelang.engine.lower import lower_with_context  # type: ignore[import-not-found]
    from tilelang.instrumentation import (  # type: ignore[import-not-found]
        compile_pass_instrumentation,
        create_pass_instruments,
    )

    try:
        mod = tvm.ir.load_json(frontend)
    except Exception as exc:
        raise Unloadable(exc, context.data) from None
    # The recorded compile was handed a PrimFunc that its caller still held; handing over the
    # same (and holding it here) keeps passes that update objects in place when nobody else
    # holds them from doing so where the recorded compile did not.
    funcs = [f for _gv, f in mod.functions.items()]
    func_or_mod = funcs[0] if len(funcs) == 1 and "global_symbol" in (funcs[0].attrs or {}) else mod
    target = context.compile_target
    if target is None:
        raise RuntimeError("context.json names no target; cannot replay this compile")
    # The target and its host as two objects, as tilelang.compile receives them: a target
    # object that carries its host already is bound differently by the lowering.
    spec = dict(context.data.get("target") or context.data.get("bound_target") or {})
    host = spec.pop("host", None)
    backend_context = create_backend_context(
        tvm.target.Target(spec), tvm.target.Target(host) if host else None, backend or "auto"
    )
    # tilelang.compile prints its targets before lowering (its compile metadata). A Target
    # keeps its text once printed, and tl.LowerDeviceKernelLaunch compares targets by their
    # text: printing them here too keeps the replay's lowering the recorded one.
    str(backend_context.target), str(backend_context.target_host)
    with compile_pass_instrumentation(name=kernel or "replay"):
        desc = f"stage=replay, kernel={kernel or 'replay'}, backend={backend_context.execution_backend.name}"
        all_instruments = [*create_pass_instruments(context=desc), *(instruments or [])]
        # Inside the backend context's own target object, as tilelang.compile runs it.
        scope = backend_context.target if context.target is not None else contextlib.nullcontext()
        with context.pass_context(all_instruments), scope:
            return lower_with_context(
                func_or_mod,
                backend_context,
                enable_host_codegen=bool(flags.get("host_codegen")),
                enable_device_compile=bool(flags.get("device_compile")),
            )


def pass_by_name(name: str) -> Any:
    """Return a new pass object for a registered pass name (`tl.X`, `tirx.X`, ...), with default arguments."""
    import importlib

    from tilelang import tvm  # type: ignore[import-not-found]

    ns, _, short = str(name).rpartition(".")
    modules = {
        "tl": ["tilelang.transform", "tilelang.cpu.transform", "tilelang.cuda.transform"],
        "tirx": ["tvm.tirx.transform"],
        "s_tir": ["tvm.s_tir.transform"],
        "tir": ["tvm.tir.transform"],
    }.get(ns, [])
    for modname in modules:
        try:
            ctor = getattr(importlib.import_module(modname), short, None)
        except ImportError:
            ctor = None
        if callable(ctor):
            with contextlib.suppress(Exception):
                p = ctor()
                if str(p.info.name) == name:
                    return p, f"{modname}.{short}()"
    for fname in (f"{ns}.transform.{short}", f"{ns}.cpu.transform.{short}"):
        f = tvm.get_global_func(fname, allow_missing=True)
        if f is not None:
            with contextlib.suppress(Exception):
                p = f()
                if str(p.info.name) == name:
                    return p, f"the registered function {fname}()"
    return None, None


_NOT_REGISTERED = (
    (re.compile(r"Operator ([\w.]+) is not registered"), "operator {}"),
    (re.compile(r"[Tt]ype(?: key| index)? [`'\"]?([\w.]+)[`'\"]? (?:is )?not registered"), "node type {}"),
    (re.compile(r"[Uu]nknown type key [`'\"]?([\w.]+)"), "node type {}"),
    (re.compile(r"[Cc]annot find (?:global )?function [`'\"]?([\w.]+)"), "function {}"),
)


class Unloadable(RuntimeError):
    """The recorded IR does not load on this TileLang: it names what this release does not have."""

    def __init__(self, error: BaseException, context: dict[str, Any]) -> None:
        self.error = error_text(error)
        self.here = str(getattr(sys.modules.get("tilelang"), "__version__", "?"))
        self.recorded = str((context.get("versions") or {}).get("tilelang") or "?")
        self.what = None
        for pattern, form in _NOT_REGISTERED:
            m = pattern.search(self.error)
            if m:
                self.what = form.format(m.group(1))
                break
        super().__init__(self.line())

    def line(self) -> str:
        """Return the one line: what is missing, on which release, recorded on which."""
        if self.what is not None:
            why = f"uses {self.what}, which TileLang {self.here} does not have"
        else:
            why = f"does not load ({self.error.strip().splitlines()[-1][:300]})"
        fix = f"; use TileLang {self.recorded} to rerun it" if self.recorded != self.here else ""
        return f"the IR recorded on TileLang {self.recorded} {why}{fix}"

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line(),
            "what": self.what,
            "error": self.error.strip().splitlines()[-1][:300] if self.error.strip() else "",
            "tilelang": self.here,
            "recorded": self.recorded,
        }


class Diverged(RuntimeError):
    """The replayed compile does not reach the recorded pass at its position (another pipeline, an edited repro.json)."""

    def __init__(self, detail: str, context: dict[str, Any]) -> None:
        self.detail = detail
        self.here = str(getattr(sys.modules.get("tilelang"), "__version__", "?"))
        self.recorded = str((context.get("versions") or {}).get("tilelang") or "?")
        super().__init__(self.line())

    def line(self) -> str:
        """Return the one line: where the replay left the recording, on which releases."""
        fix = (
            f"; use TileLang {self.recorded} to rerun it"
            if self.recorded != self.here
            else "; the same release: is repro.json the one tltrace wrote?"
        )
        return (
            f"the replay on TileLang {self.here} does not reach the pass recorded on TileLang "
            f"{self.recorded}: {self.detail}{fix}"
        )

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line(), "detail": self.detail, "tilelang": self.here, "recorded": self.recorded}


class _Stop(Exception):
    """Raised by the catching instrument once the pass has run: the rest of the compile is not needed."""


def replay_through(spec: dict[str, Any], frontend: str, context: Context) -> dict[str, Any]:
    """Replay the compile up to and through the pass at the recorded position.

    Returns the pass's registered name, its input (text, and JSON saved before it
    ran: passes may change the module in place) and its output text, or its error.
    """
    from tilelang import tvm  # type: ignore[import-not-found]

    want = int(spec["pass"]["ordinal"])
    name = spec["pass"]["name"]
    caught: dict[str, Any] = {"seen": 0}

    @tvm.instrument.pass_instrument
    class Catch:
        def run_before_pass(self, mod: Any, info: Any) -> None:
            n = caught["seen"]
            caught["seen"] = n + 1
            if n == want:
                caught["name"] = str(info.name)
                caught["before"] = str(mod)
                caught["input_json"] = tvm.ir.save_json(mod)
                caught["depth"] = caught.get("open", 0)
            caught["open"] = caught.get("open", 0) + 1

        def run_after_pass(self, mod: Any, info: Any) -> None:
            caught["open"] = caught.get("open", 1) - 1
            if "name" in caught and "after" not in caught and caught["open"] == caught["depth"]:
                caught["after"] = str(mod)
                raise _Stop()

    flags = dict(spec.get("flags") or {})
    flags["device_compile"] = bool(flags.get("device_compile")) and spec.get("build") is True
    try:
        compile_from(frontend, context, spec.get("backend"), spec.get("kernel"), flags, [Catch()])
    except Unloadable:
        raise
    except BaseException as exc:  # _Stop comes back bare or wrapped, depending on the FFI
        if "name" in caught and "after" not in caught:
            caught["error"] = error_text(exc)
            post_mortem(exc)
        elif "name" not in caught:
            line = (error_text(exc).strip().splitlines() or ["?"])[-1][:300]
            raise Diverged(f"the compile ended before pass #{want} ({name}): {line}", context.data) from None
    if "name" not in caught:
        raise Diverged(f"the compile ran {caught['seen']} passes, fewer than {want + 1}", context.data)
    if display_name(caught["name"]) != display_name(name):
        raise Diverged(f"pass #{want} is {caught['name']} here, the recording has {name} there", context.data)
    return caught


def run_pass(p: Any, mod: Any, context: Context) -> tuple[str | None, str | None]:
    """Run pass `p` alone on `mod` under the recorded context; return (output text, error)."""
    try:
        with context.pass_context(), context.target_scope():
            out = p(mod)
        return str(out), None
    except Exception as exc:
        post_mortem(exc)
        return None, error_text(exc)


def post_mortem(exc: BaseException) -> None:
    """--pdb: open pdb where the pass raised (its Python frames; a C++ pass shows the FFI's call)."""
    if POST_MORTEM and isinstance(exc, Exception):
        import pdb
        import traceback

        traceback.print_exception(exc)
        pdb.post_mortem(exc.__traceback__)


def child(mode: str, out_dir: str) -> int:
    """Rerun the pass in this process (the parent's child); write what happened to out_dir/result.json."""
    from tilelang import tvm  # type: ignore[import-not-found]

    spec = read_json(os.path.join(HERE, "repro.json"))
    files = spec["files"]
    context = Context(read_json(os.path.join(HERE, files["context"])))
    result: dict[str, Any] = {"attempts": []}
    input_file = os.path.join(HERE, files["input"] or "input.json")
    registered = spec["pass"].get("registered_name") or spec["pass"]["name"]
    if mode in ("replay", "probe") or not os.path.exists(input_file):
        frontend = read_text(os.path.join(HERE, files["frontend"]))
        try:
            caught: dict[str, Any] | None = replay_through(spec, frontend, context)
        except Unloadable as exc:
            with open(os.path.join(out_dir, RESULT), "w", encoding="utf-8") as f:
                json.dump({"failure": exc.line(), "unloadable": exc.to_json()}, f)
            return 0
        except Diverged as exc:
            if mode == "replay" or not os.path.exists(input_file):
                with open(os.path.join(out_dir, RESULT), "w", encoding="utf-8") as f:
                    json.dump({"failure": exc.line(), "diverged": exc.to_json()}, f)
                return 0
            # The probe tries the json path next: the replay is said as not run.
            result["attempts"].append({"path": "replay", "built": None, "skipped": exc.line()})
            caught = None
        if caught is not None:
            registered = caught["name"]
            if mode == "probe" and not os.path.exists(input_file):
                with open(input_file, "w", encoding="utf-8") as f:
                    f.write(caught["input_json"])
                result["input_written"] = True
            if mode != "json":
                result["attempts"].append(
                    {
                        "path": "replay",
                        "built": "the replayed compile, up to and through the pass",
                        "before": caught["before"],
                        "after": caught.get("after"),
                        "error": caught.get("error"),
                    }
                )
    if mode in ("json", "probe"):
        p, how = pass_by_name(registered)
        if p is None:
            result["attempts"].append(
                {"path": "json", "built": None, "skipped": f"no pass named {registered}"}
            )
        else:
            try:
                mod = tvm.ir.load_json(read_text(input_file))
            except Exception as exc:
                bad = Unloadable(exc, context.data)
                with open(os.path.join(out_dir, RESULT), "w", encoding="utf-8") as f:
                    json.dump({"failure": bad.line(), "unloadable": bad.to_json()}, f)
                return 0
            str(mod)  # printed before the pass, as in the traced compile (targets keep their text)
            text, err = run_pass(p, mod, context)
            result["attempts"].append(
                {"path": "json", "built": f"input.json, the pass made by {how}", "after": text, "error": err}
            )
    # A self-check: a reproducer that needs tltrace is not standalone.
    result["tltrace_imported"] = any(m == "tltrace" or m.startswith("tltrace.") for m in sys.modules)
    with open(os.path.join(out_dir, RESULT), "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


# -- the parent: compares, never imports TileLang ------------------------------------------------
def expected(spec: dict[str, Any]) -> tuple[str | None, str | None]:
    """Return (recorded output text, recorded error) of the pass."""
    exp = spec["expected"]
    after = read_text(os.path.join(HERE, exp["after"])) if exp.get("after") else None
    return after, exp.get("error")


def judge(attempt: dict[str, Any], after: str | None, error: str | None) -> tuple[bool, list[str]]:
    """Return (reproduced, lines saying how) for one attempt."""
    if attempt.get("built") is None:
        return False, [f"not run: {attempt.get('skipped')}"]
    got_after, got_error = attempt.get("after"), attempt.get("error")
    if error is not None:
        if got_error is not None and same_error(got_error, error):
            return True, [f"the same error: {got_error.strip().splitlines()[0]}"]
        if got_error is not None:
            return False, [f"a different error: {got_error}", f"recorded: {error}"]
        return False, [f"no error (the recording failed with: {error})"]
    if got_error is not None:
        return False, [f"the pass raised: {got_error}"]
    if got_after == after:
        return True, ["the output is identical to the recording"]
    diff = list(
        difflib.unified_diff(
            (after or "").splitlines(),
            (got_after or "").splitlines(),
            "recorded",
            "rerun",
            lineterm="",
            n=3,
        )
    )
    more = len(diff) - MAX_DIFF_LINES
    return False, ["the output differs from the recording:", *diff[:MAX_DIFF_LINES]] + (
        [f"... {more} more diff lines"] if more > 0 else []
    )


def no_tilelang() -> str | None:
    """Return one line saying why this Python cannot import TileLang (found without importing it), or None."""
    import importlib.util

    try:
        if importlib.util.find_spec("tilelang") is not None:
            return None
    except (ImportError, ValueError):
        pass
    if sys.flags.isolated or sys.flags.ignore_environment:
        fix = "-I/-E ignore PYTHONPATH and the user site: run it without them, or install TileLang here"
    else:
        fix = "install TileLang for it, or put it on PYTHONPATH"
    return f"TileLang is not importable by {sys.executable}; {fix}"


def run_child(mode: str) -> tuple[int, dict[str, Any] | None, str]:
    """Run this script's child mode in a fresh process; return (exit status, result, its output)."""
    with tempfile.TemporaryDirectory(prefix="repro-") as out:
        # -P (3.11): neither this directory nor the cwd first on the child's sys.path (before
        # 3.11 the child drops this directory itself); -I kept when this Python runs with it.
        safe = ["-P"] if sys.version_info >= (3, 11) else []
        cmd = [sys.executable, *(["-I"] if sys.flags.isolated else []), *safe, os.path.abspath(__file__)]
        proc = subprocess.run(
            [*cmd, "--child", mode, out], capture_output=True, text=True, errors="replace", check=False
        )
        path = os.path.join(out, RESULT)
        result = read_json(path) if os.path.exists(path) else None
    return proc.returncode, result, (proc.stdout + proc.stderr)


def run_here(mode: str) -> tuple[int, dict[str, Any] | None, str]:
    """--in-process: the child's work in this process (a debugger sees the pass); as run_child returns."""
    # As the child: neither this directory nor the cwd on sys.path (a tilelang.py here must not load).
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) not in (HERE, os.getcwd())]
    with tempfile.TemporaryDirectory(prefix="repro-") as out:
        code = child(mode, out)
        path = os.path.join(out, RESULT)
        result = read_json(path) if os.path.exists(path) else None
    return code, result, ""


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"] and len(argv) == 3:
        # Before 3.11 (no -P) this directory is first on sys.path: a tilelang.py here must not load.
        sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != HERE]
        return child(argv[1], argv[2])
    mode = None
    here = False
    for a in argv:
        if a in ("--in-process", "--pdb"):
            here = True
            if a == "--pdb":
                POST_MORTEM.append(True)
        elif a in ("--json", "--replay", "--probe"):
            mode = a[2:]
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            say(f"repro.py: unknown argument {a!r}; try --help", err=True)
            return 2
    try:
        spec = read_json(os.path.join(HERE, "repro.json"))
        after, error = expected(spec)
    except (OSError, ValueError, KeyError) as exc:
        say(f"repro.py: cannot read the files beside it ({exc})", err=True)
        return 2
    mode = mode or spec.get("path", "json")
    missing = no_tilelang()
    if missing:
        print(f"repro.py: {missing}", file=sys.stderr)
        return 2
    p = spec["pass"]
    name, kernel = visible(p["name"], one_line=True), visible(spec.get("kernel"), one_line=True)
    say(f"pass {name} (#{p['index']}, {p.get('phase')}) of {kernel}: path {mode}")
    dropped = [str(n) for n in spec.get("not_applied") or []]
    if dropped:
        say(
            f"not applied: pass config {', '.join(dropped)} (not known to be data; 'tltrace repro --build' applies them)"
        )
    code, result, output = run_here(mode) if here else run_child(mode)
    if result is None:
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        tail = "\n".join(output.strip().splitlines()[-15:])
        say(f"not reproduced: the rerun did not finish ({how})\n{tail}")
        return 1
    if mode == "probe":
        print(json.dumps(result))
        return 0
    if result.get("unloadable"):
        say(f"repro.py: {result['unloadable']['line']}", err=True)
        return EXIT_UNLOADABLE
    if result.get("diverged"):  # this TileLang's pipeline does not reach the recorded pass
        say(f"repro.py: {result['diverged']['line']}", err=True)
        return EXIT_UNLOADABLE
    attempt = next((a for a in result["attempts"] if a["path"] == mode), None)
    if attempt is None:
        say("not reproduced: nothing was run")
        return 1
    if result.get("tltrace_imported"):
        say("warning: the rerun imported tltrace; a reproducer should need TileLang only")
    ok, lines = judge(attempt, after, error)
    say(f"rerun: {attempt.get('built') or '-'}")
    for line in lines:
        say(line)
    if ok:
        say("reproduced")
        return 0
    say("not reproduced")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
