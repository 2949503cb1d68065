"""`tltrace replay SCRIPT [RUN] --launch I --build --run`: one saved launch rerun and its outputs compared.

The launch is one of `show --launches` (history/launches.py); its arguments were kept by
`run --save-inputs` (launches/inputs.py): the index line with the launch's pid and time. The
kernel is rebuilt from the launch's compile as it was recorded (its frontend IR and context,
the records `tltrace repro` and bundles rebuild from; rerun/make.py), through
`tilelang.compile` with the recorded target, backend and pass config (so `--build`: the trust
rule, rerun/trust.py), and its generated source is checked against the hash the launch log
holds for it. The rebuilt kernel is then called on the saved inputs (each .npy file's sha256
checked first, loaded with `allow_pickle=False`: data, never code; its shape and dtype checked
against the launch log's: a kernel given a shorter array than its size says writes past it),
and each argument after the call and each returned tensor are compared with the saved ones: integers and booleans exactly,
floats with `numpy.allclose` (rtol 1e-5, atol 1e-8, NaN equal to NaN), the largest error said.

Returns data (LaunchReplay); prints nothing. RecordsError (3) for missing or damaged data.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EXIT_SCRIPT_FAILED, RecordsError, TltraceError, UsageError
from ..format import launches as log_format
from ..format.layout import RUN_RECORDS, text_hash

RTOL, ATOL = 1e-5, 1e-8


class ReplayFailed(TltraceError):
    """The rebuild or the rerun of the launch raised: not reproduced (exit 1), one line."""

    exit_code = EXIT_SCRIPT_FAILED


@dataclass
class Compared:
    """One output compared: `what` names it (`argument 1 (B)`, `returned 0`)."""

    what: str
    same: bool
    detail: str  # "exact", "allclose, max abs error 0", "3 of 64 elements differ, max abs error 2.5"


@dataclass
class LaunchReplay:
    number: int
    kernel: str
    source_same: bool  # the rebuilt kernel's generated source has the recorded hash
    compared: list[Compared] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return all(c.same for c in self.compared)


def saved_index(script_dir: Path, invocation: str) -> dict[tuple[int, int], dict[str, Any]] | None:
    """{(pid, time): index line} of the invocation's saved launches; None when it saved none."""
    path = Path(script_dir) / RUN_RECORDS / log_format.inputs_name(invocation) / log_format.INPUTS_INDEX
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordsError(f"cannot read {path}: {exc}") from None
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("pid"), int) and isinstance(entry.get("t"), int):
            out[(entry["pid"], entry["t"])] = entry
    return out


def saved_entry(
    script_dir: Path, invocation: str, pid: int, t: int, number: int
) -> tuple[Path, dict[str, Any]]:
    """Return the inputs directory and the index line of launch `number` (pid, time); RecordsError when none."""
    root = Path(script_dir) / RUN_RECORDS / log_format.inputs_name(invocation)
    rerun = "rerun the script with 'tltrace run --launches --save-inputs=N'"
    index = saved_index(script_dir, invocation)
    if index is None:
        raise RecordsError(f"invocation {invocation} saved no launch inputs; {rerun}")
    entry = index.get((pid, t))
    if entry is None:
        raise RecordsError(
            f"launch {number}'s inputs were not saved (only the first N of --save-inputs=N are); {rerun}"
        )
    if "skipped" in entry:
        raise RecordsError(f"launch {number}'s inputs were not saved: {entry['skipped']}")
    return root, entry


def load_array(root: Path, item: dict[str, Any], when: str, what: str) -> Any:
    """Return the saved array of an argument (before or after the launch); RecordsError, one line, when damaged."""
    import numpy

    name = item.get(when)
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        raise RecordsError(f"{what}: the index names no {when} file")
    path = root / name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordsError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    if hashlib.sha256(data).hexdigest() != item.get(f"{when}_sha256"):
        raise RecordsError(f"{what}: {path} is damaged (its sha256 is not the recorded one)")
    import io

    try:
        return numpy.load(io.BytesIO(data), allow_pickle=False)
    except Exception as exc:
        raise RecordsError(f"{what}: {path} is not a .npy file ({type(exc).__name__}: {exc})") from None


def to_tensor(array: Any, dtype: str, device: str) -> Any:
    """A torch tensor of the recorded dtype from a saved array (a dtype NumPy lacks was saved as its bits)."""
    import torch

    t = torch.from_numpy(array.copy())
    want = getattr(torch, dtype, None)
    if want is None:
        raise RecordsError(f"torch has no dtype {dtype!r}")
    if t.dtype != want:
        t = t.view(want)
    return t.to(device)


def compare(what: str, got: Any, want: Any) -> Compared:
    """Compare an output with the saved one: exact for integers and booleans, allclose for floats."""
    import numpy

    if got.shape != want.shape or got.dtype != want.dtype:
        return Compared(
            what,
            False,
            f"shape or dtype differ: {got.dtype}{list(got.shape)} against {want.dtype}{list(want.shape)}",
        )
    if want.dtype.kind not in "fc":
        diff = int(numpy.count_nonzero(got != want))
        return Compared(what, diff == 0, "exact" if diff == 0 else f"{diff} of {want.size} elements differ")
    close = numpy.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    with numpy.errstate(invalid="ignore"):
        err = numpy.abs(got.astype(numpy.float64) - want.astype(numpy.float64))
    finite = err[numpy.isfinite(err)]
    worst = float(finite.max()) if finite.size else 0.0
    bad = int(close.size - numpy.count_nonzero(close))
    if bad == 0:
        return Compared(what, True, f"allclose, max abs error {worst:.3g}")
    return Compared(what, False, f"{bad} of {want.size} elements differ, max abs error {worst:.3g}")


def rebuild(run_dir: Path, manifest: Any, kernel_out_idx: list[int]) -> Any:
    """Compile the launch's recorded compile again (its frontend IR, target, backend, pass config)."""
    import tilelang
    from tilelang import tvm

    from .make import repro_files

    files = repro_files(run_dir, manifest)
    context = json.loads(files["context"].read_text(encoding="utf-8"))
    mod = tvm.ir.load_json(files["frontend"].read_text(encoding="utf-8"))
    funcs = [f for _gv, f in mod.functions.items()]
    if len(funcs) != 1:
        raise RecordsError(
            f"run {manifest.run_id}: its frontend IR holds {len(funcs)} functions, not one kernel"
        )
    return tilelang.compile(
        funcs[0],
        out_idx=kernel_out_idx or None,
        target=manifest.target,
        target_host=manifest.target_host,
        execution_backend=manifest.backend,
        pass_configs=dict(context.get("config") or {}),
    )


def replay_launch(
    run: Any, launch: Any, kernel_line: dict[str, Any], root: Path, entry: dict[str, Any]
) -> LaunchReplay:
    """Rebuild the launch's kernel, run it on the saved inputs, compare its outputs with the saved ones."""
    if run is None or run.manifest is None:
        raise RecordsError(f"launch {launch.number}'s compile is not in the records (untraced compile)")
    args_saved = {int(a["index"]): a for a in entry.get("args") or () if isinstance(a, dict)}
    # Load (and check) every saved file before anything is built.
    before = {i: load_array(root, a, "before", _what(launch, i)) for i, a in args_saved.items()}
    after = {i: load_array(root, a, "after", _what(launch, i)) for i, a in args_saved.items()}
    returned = [
        (j, r, load_array(root, r, "after", f"returned {j}"))
        for j, r in enumerate(entry.get("returned") or ())
        if isinstance(r, dict)
    ]
    try:
        kernel = rebuild(run.path, run.manifest, [int(i) for i in kernel_line.get("out_idx") or ()])
    except TltraceError:
        raise
    except Exception as exc:
        raise ReplayFailed(f"launch {launch.number}: the rebuild failed: {_error(exc)}") from None
    out = LaunchReplay(
        launch.number, launch.kernel, text_hash(kernel.get_kernel_source()) == kernel_line.get("source")
    )
    call: list[Any] = []
    for i, rec in enumerate(launch.args):
        if i in args_saved:
            _check_matches(_what(launch, i), rec, args_saved[i], before[i], after[i])
            call.append(to_tensor(before[i], args_saved[i]["dtype"], rec.get("device") or "cpu"))
        elif "value" in rec:
            call.append(rec["value"])
        else:
            raise RecordsError(
                f"{_what(launch, i)}: a {rec.get('type', 'tensor')} that was not saved; cannot call the kernel"
            )
    try:
        result = kernel(*call)
    except Exception as exc:
        raise ReplayFailed(
            f"launch {launch.number}: the rebuilt kernel raised on the saved inputs: {_error(exc)}"
        ) from None
    for i in sorted(args_saved):
        out.compared.append(compare(_what(launch, i), _host(call[i], after[i]), after[i]))
    got = result if isinstance(result, (list, tuple)) else [result]
    for j, _r, want in returned:
        if j >= len(got):
            out.compared.append(Compared(f"returned {j}", False, "the rebuilt kernel did not return it"))
        else:
            out.compared.append(compare(f"returned {j}", _host(got[j], want), want))
    return out


def _host(t: Any, like: Any) -> Any:
    """A tensor back as the saved array's kind (the same bits for a dtype NumPy lacks)."""
    import torch

    t = t.detach().to("cpu")
    try:
        return t.numpy()
    except TypeError:
        return t.view(getattr(torch, str(like.dtype))).numpy()


def _check_matches(what: str, rec: dict[str, Any], item: dict[str, Any], *arrays: Any) -> None:
    """The saved arrays have the shape and dtype the launch log recorded for the argument, else
    RecordsError: a kernel called on a shorter array than it was launched with writes past it."""
    shape, dtype = rec.get("shape"), rec.get("dtype")
    for a in arrays:
        if (
            [int(d) for d in a.shape] != shape
            or item.get("dtype") != dtype
            or str(a.dtype) != item.get("stored")
        ):
            raise RecordsError(
                f"{what}: the saved array ({item.get('dtype')}{list(a.shape)}) is not what the launch was "
                f"given ({dtype}{shape}); the saved inputs do not belong to this launch"
            )


def _error(exc: BaseException) -> str:
    """An exception as one line: its type and its message's last non-empty line (TVM's are long)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:300]


def _what(launch: Any, i: int) -> str:
    rec = launch.args[i] if i < len(launch.args) else {}
    name = rec.get("param") or rec.get("name")
    return f"argument {i}" + (f" ({name})" if name else "")


def check_flags(build: bool, run: bool) -> None:
    """--launch rebuilds and runs code: both --build and --run must say so."""
    if not (build and run):
        raise UsageError("--launch rebuilds the kernel and runs it on the saved inputs: give --build --run")
